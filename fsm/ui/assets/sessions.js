document.getElementById('start').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = ev.target, msg = document.getElementById('msg');
  const body = {claim: f.claim.value};
  if (f.retrieval.value) body.retrieval = f.retrieval.value;
  const r = await fetch('/api/v1/sessions', {method: 'POST',
    headers: {'content-type': 'application/json'}, body: JSON.stringify(body)});
  const data = await r.json();
  if (!r.ok) { msg.className = 'msg err'; msg.textContent = data.error.code + ': ' +
    data.error.msg; return; }
  location.href = '/sessions/' + encodeURIComponent(data.sid);
});
