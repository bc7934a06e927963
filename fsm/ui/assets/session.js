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
// Everything outside #live that depends on the head follows it too: the actions that
// cannot apply are disabled (the reason on hover), the diff pickers span the revisions
// shown now (unless the reader typed into them), times are relative.
const pickers = document.getElementById('diff');
let picked = false;
pickers.addEventListener('input', () => { picked = true; });
function follow() {
  const blockedWhy = document.getElementById('head-fsm').dataset.blocked || '';
  ['step', 'run'].forEach(id => {
    const b = document.getElementById(id);
    b.disabled = blockedWhy !== '';
    if (blockedWhy) b.title = blockedWhy; else b.removeAttribute('title');
  });
  const shown = Array.from(document.querySelectorAll('tr.rev'), tr => parseInt(tr.dataset.rev, 10));
  pickers.a.max = head; pickers.b.max = head;
  if (!picked && shown.length) {
    pickers.a.value = Math.min(...shown); pickers.b.value = Math.max(...shown);
  }
  relative();
  filter(filtered);
}
function ago(ms) {
  const s = Math.round(ms / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return s + ' s ago';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  return Math.floor(s / 86400) + ' d ago';
}
function relative() {
  const now = Date.now();
  document.querySelectorAll('#live time[datetime]').forEach(t => {
    const at = Date.parse(t.getAttribute('datetime'));
    if (!isNaN(at)) t.textContent = ago(now - at);  // the exact time stays in the title
  });
}
// A state of the diagram (or of its vertical list) shows only the revisions in it.
let filtered = null;
function filter(state) {
  filtered = state;
  let n = 0;
  document.querySelectorAll('tr.rev').forEach(tr => {
    const hide = state !== null && tr.dataset.fsm !== state;
    tr.hidden = hide; if (!hide) n++;
  });
  document.querySelectorAll('#diagram [data-state]').forEach(g =>
    g.classList.toggle('chosen', g.dataset.state === state));
  const box = document.getElementById('filter');
  if (state === null) { box.hidden = true; box.innerHTML = ''; return; }
  box.hidden = false;
  box.innerHTML = 'Showing the ' + n + ' revision' + (n === 1 ? '' : 's') + ' in <b>' +
    esc(state) + '</b> <button type="button" class="small" id="show-all">show all</button>';
  document.getElementById('show-all').addEventListener('click', () => filter(null));
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
  box.classList.add('open');
  box.innerHTML = '<h2>Revision ' + rev + ' <span class="muted">' + esc(data.fsm) +
    '</span></h2><h3>Envelope</h3><pre id="detail-envelope">' +
    esc(JSON.stringify(data.envelope, null, 2)) + '</pre><h3>Events</h3><pre id="detail-events">' +
    esc(JSON.stringify(data.events, null, 2)) + '</pre><h3>State</h3><pre id="detail-state">' +
    esc(JSON.stringify(data.state, null, 2)) + '</pre>';
  // Where the reader is looking: the detail may sit far below the clicked row.
  box.scrollIntoView({block: 'start', behavior: 'instant'});
  box.focus({preventScroll: true});
}
function bind() {
  document.querySelectorAll('tr.rev').forEach(tr => {
    tr.addEventListener('click', (ev) => {
      if (ev.target.tagName !== 'BUTTON') select(parseInt(tr.dataset.rev, 10));
    });
    tr.addEventListener('keydown', (ev) => {
      if (ev.target === tr && (ev.key === 'Enter' || ev.key === ' ')) {
        ev.preventDefault(); select(parseInt(tr.dataset.rev, 10));
      }
    });
  });
  document.querySelectorAll('#diagram [data-state]').forEach(g => {
    if (g.tagName.toLowerCase() === 'g') {  // SVG states: reachable by keyboard too
      g.setAttribute('tabindex', '0'); g.setAttribute('role', 'button');
      g.setAttribute('aria-label', 'show only the revisions in ' + g.dataset.state);
    }
    const pick = () => filter(filtered === g.dataset.state ? null : g.dataset.state);
    g.addEventListener('click', pick);
    g.addEventListener('keydown', (ev) => {
      if (g.tagName.toLowerCase() === 'g' && (ev.key === 'Enter' || ev.key === ' ')) {
        ev.preventDefault(); pick();
      }
    });
  });
  follow();
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
  out.innerHTML = '<table id="diff-table" class="wrap"><colgroup><col class="c-path">' +
    '<col class="c-op"><col><col></colgroup><tr><th>path</th><th>change</th><th>revision ' + a +
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
    if (d.rev !== head) refresh(); else relative();
  } catch (e) { /* the server went away; keep the page */ }
}, 1000);
