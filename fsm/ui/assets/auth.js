// Inlined before each page's own script when the store has API keys (docs/security.md).
(() => {
  const meta = name => (document.querySelector('meta[name="' + name + '"]') || {}).content;
  const token = meta('csrf-token'), role = meta('claimfsm-role');
  const ranks = {read: 0, review: 1, write: 2, admin: 3};
  // A logged-in page's requests that change something carry the login's CSRF token.
  const plain = window.fetch.bind(window);
  window.fetch = (url, opts) => {
    opts = opts || {};
    const method = (opts.method || 'GET').toUpperCase();
    if (token && !['GET', 'HEAD', 'OPTIONS'].includes(method)) {
      const headers = new Headers(opts.headers || {});
      headers.set('x-csrf-token', token);
      opts = Object.assign({}, opts, {headers: headers});
    }
    return plain(url, opts);
  };
  // What each control needs; the server refuses it anyway (403 FORBIDDEN). Panels are
  // redrawn after each step, so controls are checked again on every change.
  const needs = [
    ['#step, #run, #start button, [data-rollback], [data-fork], #replay-form button, ' +
     '#what-if-form button', 'write'],
    ['#review-submit', 'review'],
  ];
  function disable() {
    for (const [selector, need] of needs) {
      if (ranks[role] >= ranks[need]) continue;
      document.querySelectorAll(selector).forEach(b => {
        if (b.disabled) return;
        b.disabled = true;
        b.classList.add('forbidden');
        b.title = 'needs the ' + need + ' role (you have ' + role + ')';
      });
    }
  }
  // The key's name is the actor the server records: the review form's name field says so.
  const viewer = meta('claimfsm-viewer');
  function name() {
    document.querySelectorAll('input[name="actor"]').forEach(i => {
      if (i.readOnly) return;
      i.value = viewer;
      i.readOnly = true;
    });
  }
  const check = () => { disable(); name(); };
  check();
  new MutationObserver(check).observe(document.body, {childList: true, subtree: true});
})();
