// The what-if form of the session page: fork at a revision with the profile fields
// chosen (blank: the parent's), run the fork to its end, open it.
(() => {
  const form = document.getElementById('what-if-form');
  if (!form) return;
  const sid = document.getElementById('session').dataset.sid;
  const msg = document.getElementById('msg');
  const say = (text, err) => { msg.className = 'msg' + (err ? ' err' : ''); msg.textContent = text; };
  async function post(url, body) {
    const r = await fetch(url, {method: 'POST', headers: {'content-type': 'application/json'},
      body: JSON.stringify(body)});
    const data = await r.json();
    if (!r.ok) { say(data.error.code + ': ' + data.error.msg, true); return null; }
    return data;
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = {at: parseInt(form.elements.at.value, 10)};
    for (const name of ['retrieval', 'judge', 'stance_model']) {
      const value = form.elements[name].value.trim();
      if (value) body[name] = value;
    }
    if (body.stance_model && !body.judge) body.judge = 'learned';
    say('forking at revision ' + body.at + '…');
    const fork = await post('/api/v1/sessions/' + encodeURIComponent(sid) + '/fork', body);
    if (!fork) return;
    const done = await post('/api/v1/sessions/' + encodeURIComponent(fork.sid) + '/run', {});
    if (done) location.href = '/sessions/' + encodeURIComponent(fork.sid);
  });
})();
