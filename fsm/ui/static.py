"""The stylesheet and the session page's script, inlined into every page (and the CSS
into reports), so the UI works offline and a report is one file."""

from __future__ import annotations

__all__ = ["CSS", "SESSIONS_JS", "SESSION_JS"]

CSS = """
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,sans-serif;color:#1f2328;
background:#f6f8fa}header{display:flex;gap:18px;align-items:center;padding:10px 20px;
background:#24292f;color:#fff}header nav a{color:#c9d1d9;margin-right:14px;
text-decoration:none}header nav a:hover{color:#fff}main{padding:16px 20px;max-width:1400px}
h1{font-size:20px;margin:4px 0 12px}h2{font-size:16px;margin:18px 0 8px}
.card{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:12px 14px;
margin-bottom:14px}table{border-collapse:collapse;width:100%;background:#fff}
th,td{border-bottom:1px solid #e5e7eb;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6;font-weight:600;font-size:12px;text-transform:uppercase;color:#57606a}
tr.sel td{background:#fff8c5}tr.rev{cursor:pointer}tr.rev:hover td{background:#f0f6ff}
tr.diverged td{background:#ffebe9}code,pre{font:12px/1.4 ui-monospace,monospace}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px;
overflow:auto;max-height:480px;white-space:pre-wrap;word-break:break-word}
mark{background:#fff3a3;padding:0 1px}mark#hit{background:#ff8182;outline:2px solid #cf222e}
.badge{display:inline-block;padding:1px 7px;border-radius:10px;font-size:12px;
font-weight:600;background:#eaeef2}.ok,.SUPPORTS,.DONE{background:#dafbe1;color:#116329}
.error,.REFUTES,.FAILED{background:#ffebe9;color:#a40e26}.retry,.DISPUTED{background:#fff8c5;
color:#7d4e00}.NOT_ENOUGH_INFO{background:#ddf4ff;color:#0a3069}
button,.button{font:inherit;padding:4px 10px;border:1px solid #d0d7de;border-radius:6px;
background:#f6f8fa;cursor:pointer}button.primary{background:#1f883d;color:#fff;
border-color:#1a7f37}button.small{padding:1px 6px;font-size:12px}
input,select{font:inherit;padding:4px 6px;border:1px solid #d0d7de;border-radius:6px}
form.inline{display:flex;gap:8px;flex-wrap:wrap;align-items:center}
.grid{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);gap:14px}
.muted{color:#57606a}.msg{min-height:1.4em;font-weight:600}.msg.err{color:#cf222e}
.tools{font-size:12px;color:#57606a}.tools .fail{color:#cf222e}.diagram{overflow:auto}
.ev{margin:4px 0 8px 0}.ev a{font-size:12px}
@media (max-width:900px){.grid{grid-template-columns:1fr}}
"""

SESSIONS_JS = """
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
"""

SESSION_JS = """
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
    const r = await fetch('/sessions/' + encodeURIComponent(sid) + '/panels');
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
"""
