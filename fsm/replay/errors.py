"""The errors of reading records (re-exported by :mod:`claimfsm.replay.record`)."""

from __future__ import annotations

from claimfsm.engine.errors import ClaimFsmError, ErrorCode

__all__ = ["RecordError", "RecordTampered", "RecordTooLarge"]


class RecordError(ClaimFsmError):
    """A record that cannot be read: ``line`` names the offending line (1-based),
    ``source`` the record's file."""

    code = ErrorCode.BAD_RECORD
    _where = (*ClaimFsmError._where, "line", "source")

    def __init__(self, msg: str, *, line: int | None = None, source: str = "") -> None:
        where = " ".join(p for p in (source, f"line {line}" if line else "") if p)
        super().__init__(f"{where}: {msg}" if where else msg)
        self.line = line
        self.source = source


class RecordTampered(RecordError):
    """A line that does not match its seal: it was edited after it was written.
    ``field`` names the first edited field of the line (a JSON path)."""

    code = ErrorCode.RECORD_TAMPERED
    _where = (*RecordError._where, "field")

    def __init__(self, msg: str, *, line: int | None = None, source: str = "",
                 field: str = "") -> None:
        super().__init__(f"{field}: {msg}" if field else msg, line=line, source=source)
        self.field = field


class RecordTooLarge(RecordError):
    """A record over a documented limit (a line, the file, the number of lines, or a
    folder of records too deep or too full): ``INPUT_TOO_LARGE``."""

    code = ErrorCode.INPUT_TOO_LARGE
