"""Who a request is (docs/security.md): the store's API keys, cached briefly; the login
sessions the pages' cookie names; the per-address limit on failed attempts.

Nothing here speaks HTTP (:mod:`claimfsm.ui.authz` does): a :class:`Gate` answers "which
live key is this text", "which login is this cookie", and "may this address try again".
The key text is never kept, logged or put in an error message; a login session keeps the
key's name and id, so revoking the key ends its logins too.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from claimfsm.state.keys import ApiKey, role_rank, split_key, stamp
from claimfsm.state.store import StateStore

__all__ = ["KEY_TTL", "LOGIN_TTL", "Gate", "Login", "Throttle"]

#: Seconds a loaded key list is trusted: a key added, revoked or expired elsewhere (the
#: CLI, another server) takes effect within this long.
KEY_TTL = 5.0
#: Seconds a login lasts (the cookie's Max-Age); logging out or revoking ends it sooner.
LOGIN_TTL = 12 * 3600
_MAX_LOGINS = 10_000


@dataclass(frozen=True)
class Login:
    """One signed-in browser: the key's name, id and role, and the CSRF token its forms
    carry."""

    name: str
    key_id: str
    role: str
    csrf: str
    until: float

    def may(self, role: str) -> bool:
        """Whether the login's role is ``role`` or above."""
        return role_rank(self.role) >= role_rank(role)


@dataclass
class Throttle:
    """At most ``limit`` failed attempts per client address in ``window`` seconds; past
    that the address is refused until its oldest counted failure is ``window`` old."""

    limit: int = 10
    window: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _failures: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wait(self, address: str) -> int:
        """Seconds ``address`` must wait before trying again (0: it may try now)."""
        with self._lock:
            seen = self._recent(address)
            if seen is None or len(seen) < self.limit:
                return 0
            return max(1, math.ceil(seen[0] + self.window - self.clock()))

    def failed(self, address: str) -> None:
        """Count one failed attempt from ``address``."""
        with self._lock:
            seen = self._recent(address)
            if seen is None:
                if len(self._failures) >= 10_000:  # bounded memory: forget the idle ones
                    for name in [a for a in self._failures if not self._recent(a)]:
                        del self._failures[name]
                seen = self._failures[address] = deque()
            seen.append(self.clock())
            while len(seen) > self.limit:
                seen.popleft()

    def _recent(self, address: str) -> deque[float] | None:
        seen = self._failures.get(address)
        if seen is not None:
            cutoff = self.clock() - self.window
            while seen and seen[0] <= cutoff:
                seen.popleft()
        return seen


class Gate:
    """The keys of ``store`` and the logins made with them.

    ``ttl`` seconds: how long a loaded key list is used before the store is read again
    (:data:`KEY_TTL`). ``clock`` (monotonic seconds) and ``now`` (wall time) are
    injectable for tests.
    """

    def __init__(self, store: StateStore, *, ttl: float = KEY_TTL,
                 clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 throttle: Throttle | None = None) -> None:
        self.store = store
        self.ttl = ttl
        self.clock = clock
        self.now = now
        self.throttle = throttle or Throttle(clock=clock)
        self._keys: Mapping[str, ApiKey] = {}
        # Key texts already checked against their digest, until the next reload: a
        # client sends the same key on every call, and the HMAC need not run each time.
        self._verified: dict[str, ApiKey] = {}
        self._second = -1
        self._now = ""
        self._any = False
        self._loaded: float | None = None
        self._logins: dict[str, Login] = {}
        self._lock = threading.Lock()

    # -- keys ---------------------------------------------------------------------------

    def stale(self) -> bool:
        """Whether the key list must be read again (:meth:`reload`) before use."""
        return self._loaded is None or self.clock() - self._loaded >= self.ttl

    def reload(self) -> None:
        """Read the store's keys (blocking: the guard calls it off the event loop)."""
        rows = list(self.store.api_keys())
        with self._lock:
            self._keys = {k.key_id: k for k in rows}
            self._verified = {}
            # A store whose every key is revoked or expired stays locked: revoking the
            # last key must not open the server to everyone.
            self._any = bool(rows)
            self._loaded = self.clock()

    def forget(self) -> None:
        """Drop the cached key list (after this process changed the keys)."""
        self._loaded = None

    @property
    def required(self) -> bool:
        """Whether the store has (or had) a key: then every request needs one."""
        return self._any

    def key(self, text: str) -> ApiKey | None:
        """The live key whose text is ``text``, else ``None``."""
        found = self._verified.get(text)
        if found is None:
            parts = split_key(text)
            if parts is None:
                return None
            found = self._keys.get(parts[0])
            if found is None or not found.matches(parts[1]):
                return None
            if len(self._verified) < 1000:
                self._verified[text] = found
        return found if found.live(self._stamp()) else None

    def _stamp(self) -> str:
        # Key times have whole seconds: format the wall time once a second.
        now = self.now()
        second = int(now.timestamp())
        if second != self._second:
            self._second, self._now = second, stamp(now)
        return self._now

    # -- logins -------------------------------------------------------------------------

    def login(self, key: ApiKey) -> tuple[str, Login]:
        """A new login for ``key``: the cookie value and the login."""
        token = secrets.token_urlsafe(32)
        made = Login(key.name, key.key_id, key.role, secrets.token_urlsafe(32),
                     self.clock() + LOGIN_TTL)
        with self._lock:
            if len(self._logins) >= _MAX_LOGINS:
                self._drop_oldest()
            self._logins[token] = made
        return token, made

    def logged_in(self, token: str) -> Login | None:
        """The login of cookie value ``token`` while it lasts and its key is live."""
        made = self._logins.get(token)
        if made is None:
            return None
        key = self._keys.get(made.key_id)
        if made.until <= self.clock() or key is None or not key.live(self._stamp()):
            self.logout(token)
            return None
        return made

    def logout(self, token: str) -> None:
        """End the login of cookie value ``token`` (none: nothing)."""
        with self._lock:
            self._logins.pop(token, None)

    def _drop_oldest(self) -> None:
        oldest = min(self._logins, key=lambda t: self._logins[t].until)
        del self._logins[oldest]
