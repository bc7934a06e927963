"""A revision row's commit time: the engine's UTC timestamps in 7 bytes, not 32 characters.

The engine stamps each revision ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``. Since schema 4 a
row holds such a time as a 7-byte blob (hours since 1970, then microseconds into the
hour, big-endian: the order of the times); any other
text (another offset, no fraction, a leap second, a time before 1970) stays text, as
every row of an older file does. A stamp reads back as exactly the text committed: it is
packed only when its digits format back to the same characters. The 25 bytes saved a
row are ~7% of a step of the side-by-side harness's workflow (docs/bench.md).

Both directions look the hour up in a small table, so a row costs a few integer
operations and one format, not a ``datetime``.
"""

from __future__ import annotations

import struct
from datetime import UTC, datetime, timedelta

from claimfsm.state.codec import CodecError
from claimfsm.state.sqlite.db import CorruptStore

__all__ = ["pack_ts", "session_ts", "ts_text"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SIZE = 7
# 3 bytes of hours since 1970 (to the year 3883), 4 of microseconds into the hour: small
# integers both ways, where one count of microseconds since 1970 is a big one to divide.
_LAYOUT = struct.Struct(">BHI")
_PACK, _UNPACK = _LAYOUT.pack, _LAYOUT.unpack
_HOUR_LIMIT = 1 << 24
# 'YYYY-MM-DDTHH:' <-> hours since 1970, both ways; -1: not packable.
_HOURS: dict[str, int] = {}
_PREFIXES: dict[int, str] = {}
_BOUND = 4096  # hours remembered each way (a long-running process meets a few a day)
# 'MM:SS.' of each second of an hour, and back to microseconds into the hour.
_CLOCK = tuple(f"{m:02d}:{s:02d}." for m in range(60) for s in range(60))
_SECONDS = {text: i * 1_000_000 for i, text in enumerate(_CLOCK)}
_DIGITS = tuple(f"{n:03d}" for n in range(1000))


def _hour_of(prefix: str) -> int:
    """Hours since 1970 at the hour ``prefix`` names, or -1 when it is not the canonical
    form of one (or is before 1970, or past what 3 bytes count)."""
    found = _HOURS.get(prefix)
    if found is not None:
        return found
    value = -1
    if prefix.isascii() and prefix[4] + prefix[7] + prefix[10] + prefix[13] == "--T:":
        digits = prefix[:4] + prefix[5:7] + prefix[8:10] + prefix[11:13]
        if digits.isdigit():
            try:
                at = datetime(int(digits[:4]), int(digits[4:6]), int(digits[6:8]),
                              int(digits[8:10]), tzinfo=UTC)
            except ValueError:  # month 13, hour 24...
                at = None
            if at is not None and at >= _EPOCH:
                value = (at - _EPOCH) // timedelta(hours=1)
                if value >= _HOUR_LIMIT:
                    value = -1
    if len(_HOURS) >= _BOUND:
        _HOURS.clear()
    _HOURS[prefix] = value
    return value


def pack_ts(ts: str) -> str | bytes:
    """``ts`` as a row stores it: 7 bytes for the engine's UTC form, else the text."""
    if len(ts) != 32 or ts[26:] != "+00:00":
        return ts
    hour = _HOURS.get(ts[:14])
    if hour is None:
        hour = _hour_of(ts[:14])
    seconds = _SECONDS.get(ts[14:20], -1)  # 'MM:SS.': a leap second is not there
    micro = ts[20:26]
    if hour < 0 or seconds < 0 or not (micro.isascii() and micro.isdigit()):
        return ts
    return _PACK(hour >> 16, hour & 0xFFFF, seconds + int(micro))


def _prefix(hour: int) -> str:
    prefix = (_EPOCH + timedelta(hours=hour)).isoformat()[:14]
    if len(_PREFIXES) >= _BOUND:
        _PREFIXES.clear()
    _PREFIXES[hour] = prefix
    return prefix


def ts_text(value: object) -> str:
    """The text of a stored ``ts`` (text as it is, 7 bytes unpacked); :class:`CodecError`
    for anything else."""
    if type(value) is str:
        return value
    if type(value) is not bytes or len(value) != _SIZE:
        raise CodecError(f"a row's ts is {type(value).__name__}, not text or {_SIZE} bytes")
    high, low, rest = _UNPACK(value)
    hour = (high << 16) | low
    prefix = _PREFIXES.get(hour) or _prefix(hour)
    seconds, micro = divmod(rest, 1_000_000)
    if seconds >= 3600:
        raise CodecError(f"a row's packed ts has {rest} microseconds past its hour")
    milli, micro = divmod(micro, 1000)
    # Only strings in the f-string: formatting an int costs more than the rest together.
    return f"{prefix}{_CLOCK[seconds]}{_DIGITS[milli]}{_DIGITS[micro]}+00:00"


def session_ts(value: object, sid: str) -> str:
    """:func:`ts_text` for a query that lists sessions: a ``ts`` that is neither text nor
    7 bytes is :class:`~claimfsm.state.sqlite.db.CorruptStore` (fsck finds the row)."""
    if type(value) is str:
        return value
    try:
        return ts_text(value)
    except CodecError as exc:
        raise CorruptStore(f"session {sid!r} does not decode: {exc}", sid=sid) from exc
