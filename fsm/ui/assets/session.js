const root = document.getElementById('session');
const sid = root.dataset.sid;
const api = '/api/v1/sessions/' + encodeURIComponent(sid);
let head = parseInt(root.dataset.rev, 10), selected = null;
const msg = document.getElementById('msg');
function say(text, err) { msg.className = 'msg' + (err ? ' err' : ''); msg.textContent = text; }
function esc(s) { const d = document.createElement('div'); d.textContent = s; return d.innerHTML; }
async function call(path, body) {
  const r = await fetch(api + path, {method: 'POST', headers: {'content-type':
    'application/json'}, body: JSON.stringify(body || {})});
  const data = await r.json();
  if (!r.ok) { say(data.error.code + ': ' + data.error.msg, true); return null; }
  return data;
}
let busy = false;
async function refresh() {
  if (busy) return;  // one refresh at a time; the poll catches anything it missed
  busy = true;
  try {
    // The page the reader is on (?before=N): a refresh keeps it.
    const r = await fetch('/sessions/' + encodeURIComponent(sid) + '/panels' + location.search);
    if (!r.ok) return;
    const html = await r.text();
    const live = document.getElementById('live');
    live.innerHTML = html;
    head = parseInt(live.querySelector('[data-head]').dataset.head, 10);
    root.dataset.rev = head;
    root.dataset.fsm = document.getElementById('head-fsm').textContent;
    bind();
    if (selected !== null) mark(selected);
  } finally { busy = false; }
}
function mark(rev) {
  document.querySelectorAll('tr.rev').forEach(tr =>
    tr.classList.toggle('sel', tr.dataset.rev === String(rev)));
}
async function select(rev) {
  selected = rev; mark(rev);
  const r = await fetch(api + '/revisions/' + rev);
  const data = await r.json();
  const box = document.getElementById('detail');
  box.innerHTML = '<h2>Revision ' + rev + ' <span class="muted">' + esc(data.fsm) +
    '</span></h2><h3>Envelope</h3><pre id="detail-envelope">' +
    esc(JSON.stringify(data.envelope, null, 2)) + '</pre><h3>Events</h3><pre id="detail-events">' +
    esc(JSON.stringify(data.events, null, 2)) + '</pre><h3>State</h3><pre id="detail-state">' +
    esc(JSON.stringify(data.state, null, 2)) + '</pre>';
}
function bind() {
  document.querySelectorAll('tr.rev').forEach(tr => tr.addEventListener('click', (ev) => {
    if (ev.target.tagName !== 'BUTTON') select(parseInt(tr.dataset.rev, 10));
  }));
  document.querySelectorAll('button[data-rollback]').forEach(b => b.addEventListener('click',
    async () => { const to = parseInt(b.dataset.rollback, 10);
      const reopen = root.dataset.fsm === 'FAILED' && confirm('Reopen the failed session?');
      const d = await call('/rollback', {to: to, reopen: reopen, expected_rev: head});
      if (d) { say('rolled back: revision ' + d.rev + ' = revision ' + to); refresh(); } }));
  document.querySelectorAll('button[data-fork]').forEach(b => b.addEventListener('click',
    async () => { const d = await call('/fork', {at: parseInt(b.dataset.fork, 10)});
      if (d) location.href = '/sessions/' + encodeURIComponent(d.sid); }));
}
document.getElementById('step').addEventListener('click', async () => {
  const d = await call('/step', {expected_rev: head});
  if (d) { say(d.committed ? 'step: ' + d.before + ' -> ' + d.after + ' (rev ' + d.rev + ')'
      : 'step not committed: ' + (d.envelope.e ? d.envelope.e.code : d.envelope.s),
      !d.committed); refresh(); }
});
document.getElementById('run').addEventListener('click', async () => {
  const d = await call('/run', {expected_rev: head});
  if (d) { say('ran to ' + d.fsm + ' (rev ' + d.rev + ')' + (d.verdict ? ': ' + d.verdict : ''));
    refresh(); }
});
document.getElementById('check').addEventListener('click', async () => {
  const r = await fetch(api + '/check');
  const d = await r.json();
  if (!r.ok) { say(d.error.code + ': ' + d.error.msg, true); return; }
  say(d.ok ? 'chain ok: ' + d.revisions + ' revisions verified'
    : 'chain BROKEN at revision ' + d.rev + ': ' + d.problem + ' ' + d.detail, !d.ok);
});
document.getElementById('diff').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const a = ev.target.a.value, b = ev.target.b.value;
  const r = await fetch(api + '/diff?a=' + a + '&b=' + b);
  const data = await r.json();
  const out = document.getElementById('diff-out');
  if (!r.ok) { out.textContent = data.error.code + ': ' + data.error.msg; return; }
  out.innerHTML = '<table id="diff-table"><tr><th>path</th><th>change</th><th>revision ' + a +
    '</th><th>revision ' + b + '</th></tr>' + data.changes.map(c => '<tr><td><code>' +
    esc(c.path) + '</code></td><td>' + c.op + '</td><td><code>' + esc(JSON.stringify(c.before)) +
    '</code></td><td><code>' + esc(JSON.stringify(c.after)) + '</code></td></tr>').join('') +
    '</table><p class="muted">' + data.changes.length + ' changes</p>';
});
bind();
setInterval(async () => {
  try {
    const r = await fetch(api + '/head?brief=1');
    if (!r.ok) return;
    const d = await r.json();
    if (d.rev !== head) refresh();
  } catch (e) { /* the server went away; keep the page */ }
}, 1000);
