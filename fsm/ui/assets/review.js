// The review form of a session waiting in REVIEW (fsm/ui/review.py). It posts the
// reviewer's decision with the revision the page showed; a form the reviewer has started
// survives the page's live refresh, so if the session moved on meanwhile the decision is
// refused (REV_CONFLICT) instead of landing on a head they have not seen.
(() => {
  const page = document.getElementById('session');
  const live = document.getElementById('live');
  const inputUrl = '/api/v1/sessions/' + encodeURIComponent(page.dataset.sid) + '/input';
  const KEY = 'claimfsm.reviewer';
  let kept = document.getElementById('review-form');
  const lines = t => t.split('\n').map(s => s.trim()).filter(Boolean);
  function mine(el) { return el && el.form && el.form.id === 'review-form'; }
  function show(f) {
    const d = f.decision.value;
    f.querySelectorAll('[data-for]').forEach(p => { p.hidden = !p.dataset.for.split(' ').includes(d); });
  }
  function prefill(f) {
    if (!f || f.actor.value) return;
    try { f.actor.value = localStorage.getItem(KEY) || ''; } catch (e) { /* no storage */ }
  }
  function say(f, text, err) {
    const m = f.querySelector('#review-msg');
    m.className = 'msg' + (err ? ' err' : '');
    m.textContent = text;
  }
  document.addEventListener('input', ev => { if (mine(ev.target)) ev.target.form.dataset.dirty = '1'; });
  document.addEventListener('change', ev => {
    if (!mine(ev.target)) return;
    ev.target.form.dataset.dirty = '1';
    if (ev.target.name === 'decision') show(ev.target.form);
  });
  document.addEventListener('submit', async ev => {
    const f = ev.target;
    if (f.id !== 'review-form') return;
    ev.preventDefault();
    const decision = f.decision.value, input = {decision: decision};
    if (decision === 'override' && f.verdict.value) input.verdict = f.verdict.value;
    if (decision === 'send_back') {
      input.queries = lines(f.queries.value);
      input.doc_ids = lines(f.doc_ids.value);
    }
    // An empty verdict or reason is left out, for the server to name the missing field.
    if (decision !== 'approve' && f.reason.value.trim()) input.reason = f.reason.value.trim();
    const actor = f.actor.value.trim();
    try { if (actor) localStorage.setItem(KEY, actor); } catch (e) { /* no storage */ }
    f.querySelector('#review-submit').disabled = true;
    try {
      const r = await fetch(inputUrl, {method: 'POST', headers: {'content-type': 'application/json'},
        body: JSON.stringify({input: input, expected_rev: parseInt(f.dataset.rev, 10), actor: actor})});
      const d = await r.json();
      if (!r.ok) {
        const stale = d.error.code === 'REV_CONFLICT'
          ? ' (the session has moved on since this page showed it: reload to see it now)' : '';
        say(f, d.error.code + ': ' + d.error.msg + stale, true);
        return;
      }
      say(f, 'decision recorded (revision ' + d.input_rev + '); the session is now in ' + d.fsm +
        (d.verdict ? ' with ' + d.verdict + ' by ' + d.provenance : ''));
      delete f.dataset.dirty;  // done: the refresh may replace it
      if (typeof refresh === 'function') refresh();
    } finally { f.querySelector('#review-submit').disabled = false; }
  });
  // The page redraws #live when a revision lands (session.js). A form the reviewer has
  // touched is put back in place of the new one, marked stale; an untouched one is not.
  new MutationObserver(() => {
    const fresh = document.getElementById('review-form');
    if (kept && kept.dataset.dirty && !kept.isConnected) {
      const slot = document.getElementById('review-slot');
      if (!slot) return;
      if (fresh) fresh.replaceWith(kept); else slot.appendChild(kept);
      const t = live.querySelector('[data-head]');
      const note = kept.querySelector('#review-note');
      note.className = 'msg err review-note';
      note.textContent = 'This session has moved on' + (t ? ' (now revision ' + t.dataset.head +
        ', in ' + document.getElementById('head-fsm').textContent + ')' : '') +
        ' since you started this decision.';
      return;
    }
    if (fresh !== kept) { kept = fresh; prefill(kept); }
  }).observe(live, {childList: true, subtree: true});
  prefill(kept);
})();
