"""API keys as the store keeps them (docs/security.md): a name, a role, a public key id
and a keyed SHA-256 digest of the secret, never the secret itself.

A key is ``cfk_<id>_<secret>``: ``id`` (12 hex digits) finds the row, ``secret`` (256
random bits) is checked against ``digest = HMAC-SHA-256(salt, secret)`` with a per-key
random salt. A slow password hash (scrypt, PBKDF2) defends guessable passwords against an
attacker holding the digests; a 256-bit random secret cannot be guessed at any hash
speed, so one HMAC (about a microsecond) is as safe here and cheap enough to run on every
request. Names are never reused, revoked ones included, so the actor recorded on a
revision names one key for ever.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import UTC, datetime, timedelta

from claimfsm._base.errors import BadInput, ErrorCode
from claimfsm.state.errors import StoreError
from claimfsm.state.model import Frozen

__all__ = [
    "PREFIX",
    "ROLES",
    "ApiKey",
    "KeyExists",
    "UnknownKey",
    "check_name",
    "check_role",
    "new_key",
    "parse_duration",
    "role_rank",
    "split_key",
    "stamp",
]

#: The roles, weakest first: each may do what the ones before it may.
ROLES: tuple[str, ...] = ("read", "review", "write", "admin")
PREFIX = "cfk_"
_ID_HEX = 12
_KEY = re.compile(r"^cfk_([0-9a-f]{12})_([A-Za-z0-9_-]{1,180})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_DURATION = re.compile(r"^([1-9][0-9]{0,5})([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class KeyExists(StoreError):
    """An API key of that name exists, or existed and was revoked."""

    code = ErrorCode.KEY_EXISTS


class UnknownKey(StoreError):
    """No live API key of that name."""

    code = ErrorCode.UNKNOWN_KEY


class ApiKey(Frozen):
    """One stored key. Times are UTC ``YYYY-MM-DDTHH:MM:SSZ`` (they compare as text);
    ``salt`` and ``digest`` are hex."""

    name: str
    role: str
    key_id: str
    salt: str
    digest: str
    created_at: str
    expires_at: str | None = None
    revoked_at: str | None = None
    #: Who added and who revoked the key (an admin key's name, or the CLI's ``--actor``);
    #: ``None`` on rows from before they were recorded.
    created_by: str | None = None
    revoked_by: str | None = None

    def live(self, now: str) -> bool:
        """Neither revoked nor expired at ``now`` (a :func:`stamp`)."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    def matches(self, secret: str) -> bool:
        """Whether ``secret`` is this key's (constant-time comparison)."""
        return hmac.compare_digest(_digest(bytes.fromhex(self.salt), secret), self.digest)

    def public(self) -> dict[str, str | None]:
        """What ``keys list`` shows: everything but the salt and digest."""
        return {"name": self.name, "role": self.role, "created_at": self.created_at,
                "expires_at": self.expires_at, "revoked_at": self.revoked_at,
                "created_by": self.created_by, "revoked_by": self.revoked_by}


def _digest(salt: bytes, secret: str) -> str:
    return hmac.new(salt, secret.encode(), hashlib.sha256).hexdigest()


def stamp(when: datetime) -> str:
    """``when`` as a stored key time."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_role(role: str) -> str:
    """``role`` if it is one of :data:`ROLES`, else ``BAD_ROLE`` naming the field."""
    if role not in ROLES:
        raise BadInput(f"role: {role!r} is not one of {', '.join(ROLES)}", field="role",
                       code=ErrorCode.BAD_ROLE)
    return role


def role_rank(role: str) -> int:
    """``role``'s place in :data:`ROLES` (read 0 .. admin 3)."""
    return ROLES.index(check_role(role))


def check_name(name: str) -> str:
    """``name`` if it is a usable key name (1-64 letters, digits, ``._@-``)."""
    if not _NAME.match(name):
        raise BadInput(f"name: {name[:80]!r} must be 1-64 letters, digits or ._@- and start "
                       "with a letter or digit", field="name")
    return name


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` as a timedelta; else ``BAD_DURATION``."""
    found = _DURATION.match(text.strip().lower())
    if found is None:
        raise BadInput(f"expires: {text[:40]!r} is not a duration like 30d, 12h, 90m or 2w",
                       field="expires", code=ErrorCode.BAD_DURATION)
    return timedelta(seconds=int(found.group(1)) * _UNIT[found.group(2)])


def new_key(name: str, role: str, *, now: datetime, expires: timedelta | None = None,
            actor: str | None = None) -> tuple[str, ApiKey]:
    """A fresh key: its text (shown once, never stored) and the row to store, recording
    ``actor`` (who adds it) when given."""
    check_name(name)
    check_role(role)
    key_id = secrets.token_hex(_ID_HEX // 2)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    row = ApiKey(name=name, role=role, key_id=key_id, salt=salt.hex(),
                 digest=_digest(salt, secret), created_at=stamp(now),
                 expires_at=None if expires is None else stamp(now + expires),
                 created_by=actor)
    return f"{PREFIX}{key_id}_{secret}", row


def split_key(text: str) -> tuple[str, str] | None:
    """``(key_id, secret)`` of a key's text, or ``None`` when it has not a key's shape."""
    found = _KEY.match(text)
    return None if found is None else (found.group(1), found.group(2))
