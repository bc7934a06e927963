"""A revision row's commit time: the engine's UTC timestamps in 7 bytes, not 32 characters.

The engine stamps each revision ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00``. Since schema 4 a
row holds such a time as a 7-byte blob (microseconds since 1970, big-endian); any other
text (another offset, no fraction, a leap second, a time before 1970) stays text, as
every row of an older file does. A stamp reads back as exactly the text committed: it is
packed only when its digits format back to the same characters. The 25 bytes saved a
row are ~7% of a step of the side-by-side harness's workflow (docs/bench.md).

Both directions look the hour up in a small table, so a row costs a few integer
operations and one format, not a ``datetime``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from claimfsm.state.codec import CodecError
from claimfsm.state.sqlite.db import CorruptStore

__all__ = ["pack_ts", "session_ts", "ts_hex", "ts_text"]

_US_HOUR = 3_600_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LIMIT = 1 << 56  # 7 bytes: past the year 4000
_SIZE = 7
# 'YYYY-MM-DDTHH:' <-> microseconds at that hour since 1970, both ways; -1: not packable.
_HOURS: dict[str, int] = {}
_PREFIXES: dict[int, str] = {}
_BOUND = 4096  # hours remembered each way (a long-running process meets a few a day)
# 'MM:SS.' of each second of an hour, and back to microseconds into the hour.
_CLOCK = tuple(f"{m:02d}:{s:02d}." for m in range(60) for s in range(60))
_SECONDS = {text: i * 1_000_000 for i, text in enumerate(_CLOCK)}


def _hour_of(prefix: str) -> int:
    """Microseconds since 1970 at the hour ``prefix`` names, or -1 when it is not the
    canonical form of one (or is before 1970)."""
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
                value = (at - _EPOCH) // timedelta(hours=1) * _US_HOUR
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
    value = hour + seconds + int(micro)
    if value >= _LIMIT:
        return ts
    return value.to_bytes(_SIZE, "big")


def _text(value: int) -> str:
    hour, rest = divmod(value, _US_HOUR)
    prefix = _PREFIXES.get(hour)
    if prefix is None:
        prefix = (_EPOCH + timedelta(hours=hour)).isoformat()[:14]
        if len(_PREFIXES) >= _BOUND:
            _PREFIXES.clear()
        _PREFIXES[hour] = prefix
    seconds, micro = divmod(rest, 1_000_000)
    # 1_000_000 + micro: six digits after its leading 1, zeros kept.
    return f"{prefix}{_CLOCK[seconds]}{str(1_000_000 + micro)[1:]}+00:00"


def ts_text(value: object) -> str:
    """The text of a stored ``ts`` (text as it is, 7 bytes unpacked); :class:`CodecError`
    for anything else."""
    if type(value) is str:
        return value
    if type(value) is not bytes or len(value) != _SIZE:
        raise CodecError(f"a row's ts is {type(value).__name__}, not text or {_SIZE} bytes")
    return _text(int.from_bytes(value, "big"))


def ts_hex(value: object) -> str:
    """:func:`ts_text` of a packed ``ts`` that SQL handed over as hex digits
    (``hex(ts)`` inside a JSON array: JSON has no bytes)."""
    if type(value) is not str or len(value) != 2 * _SIZE:
        raise CodecError(f"a row's packed ts is {value!r:.40}, not {_SIZE} bytes")
    return _text(int(value, 16))


def session_ts(value: object, sid: str) -> str:
    """:func:`ts_text` for a query that lists sessions: a ``ts`` that is neither text nor
    7 bytes is :class:`~claimfsm.state.sqlite.db.CorruptStore` (fsck finds the row)."""
    if type(value) is str:
        return value
    try:
        return ts_text(value)
    except CodecError as exc:
        raise CorruptStore(f"session {sid!r} does not decode: {exc}", sid=sid) from exc
