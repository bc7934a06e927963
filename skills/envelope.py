"""The compact envelope every skill answers with: ``{s, d, e, rb}``.

Field names are the wire format and are kept short on purpose. Serialisation goes
through orjson with a fixed key order (``s, d, e, rb``; inside ``d`` the skill's own
fields first, ``sp`` last), so the same input always gives byte-identical bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "Envelope",
    "ErrorInfo",
    "Rollback",
    "StatePatch",
    "Status",
    "dumps",
]

Status = Literal["ok", "error", "retry"]
Rollback = Literal["none", "state", "tools"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StatePatch(_Frozen):
    """``sp``: the revision the step will commit and the FSM state it moves to."""

    rev: int = Field(ge=0)
    fsm: str = Field(min_length=1)


class ErrorInfo(_Frozen):
    """``e``: a stable error code and a message for people."""

    code: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    msg: str


class Envelope(_Frozen):
    """One skill answer. ``d`` holds the skill output plus ``sp``; it is null on error."""

    s: Status
    d: dict[str, Any] | None = None
    e: ErrorInfo | None = None
    rb: Rollback = "none"

    @property
    def sp(self) -> StatePatch | None:
        """The state patch carried in ``d.sp``, if any (validated)."""
        if self.d is None or "sp" not in self.d:
            return None
        return StatePatch.model_validate(self.d["sp"])

    @property
    def data(self) -> dict[str, Any]:
        """``d`` without ``sp``: the skill's own output."""
        if self.d is None:
            return {}
        return {k: v for k, v in self.d.items() if k != "sp"}

    @classmethod
    def ok(cls, data: Mapping[str, Any], *, rev: int, fsm: str) -> Envelope:
        """Success: ``data`` (already JSON-shaped) with ``sp`` appended last."""
        d = dict(data)
        d.pop("sp", None)
        d["sp"] = {"rev": rev, "fsm": fsm}
        return cls(s="ok", d=d, e=None, rb="none")

    @classmethod
    def error(cls, code: str, msg: str, *, rb: Rollback = "none") -> Envelope:
        """An expected failure, as data."""
        return cls(s="error", d=None, e=ErrorInfo(code=code, msg=msg), rb=rb)

    @classmethod
    def retry(cls, code: str, msg: str) -> Envelope:
        """A transient failure: the driver stores an attempt counter and retries."""
        return cls(s="retry", d=None, e=ErrorInfo(code=code, msg=msg), rb="none")

    def to_dict(self) -> dict[str, Any]:
        """The envelope as plain JSON data, keys in wire order."""
        return {
            "s": self.s,
            "d": self.d,
            "e": None if self.e is None else {"code": self.e.code, "msg": self.e.msg},
            "rb": self.rb,
        }

    def to_json(self) -> bytes:
        """Compact orjson bytes; byte-identical for equal envelopes."""
        return dumps(self.to_dict())

    @classmethod
    def from_json(cls, raw: bytes | str | Mapping[str, Any]) -> Envelope:
        """Parse and validate an envelope (raises pydantic's ValidationError)."""
        obj = orjson.loads(raw) if isinstance(raw, (bytes, str)) else dict(raw)
        return cls.model_validate(obj)


def dumps(obj: Any) -> bytes:
    """The project's one JSON encoder (orjson, insertion-ordered keys, compact)."""
    return orjson.dumps(obj)


# Re-exported so callers can catch validation failures without importing pydantic.
EnvelopeValidationError = ValidationError
