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
// "3 min ago", the exact time on hover (the title the server wrote).
function ago(ms) {
  const s = Math.round(ms / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return s + ' s ago';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  return Math.floor(s / 86400) + ' d ago';
}
document.querySelectorAll('#sessions time[datetime]').forEach(t => {
  const at = Date.parse(t.getAttribute('datetime'));
  if (!isNaN(at)) t.textContent = ago(Date.now() - at);
});
