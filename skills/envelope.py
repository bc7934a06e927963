"""The compact envelope every skill answers with: ``{s, d, e, rb}``.

Field names are the wire format and are kept short on purpose. Serialisation goes
through orjson with a fixed key order (``s, d, e, rb``; inside ``d`` the skill's own
fields first, ``sp`` last), so the same input always gives byte-identical bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import orjson
from pydantic import Field, ValidationError

from claimfsm._base.errors import CODE_PATTERN
from claimfsm._base.json import dumps
from claimfsm._base.models import Frozen, trusted

__all__ = [
    "Envelope",
    "ErrorInfo",
    "Rollback",
    "StatePatch",
    "Status",
    "dumps",
    "trusted",
]

Status = Literal["ok", "error", "retry"]
Rollback = Literal["none", "state", "tools"]
class StatePatch(Frozen):
    """``sp``: the revision the step will commit and the FSM state it moves to."""

    rev: int = Field(ge=0)
    fsm: str = Field(min_length=1)


class ErrorInfo(Frozen):
    """``e``: a stable error code and a message for people.

    The library's skills answer with :class:`~claimfsm._base.errors.ErrorCode` members;
    a custom skill may use a code of its own, so any UPPER_SNAKE code is accepted here.
    """

    code: str = Field(pattern=CODE_PATTERN.pattern)
    msg: str


class Envelope(Frozen):
    """One skill answer. ``d`` holds the skill output plus ``sp``; it is null on error."""

    s: Status
    d: dict[str, Any] | None = None
    e: ErrorInfo | None = None
    rb: Rollback = "none"

    @property
    def sp(self) -> StatePatch | None:
        """The state patch carried in ``d.sp``, if any (validated)."""
        move = self.move()
        return None if move is None else trusted(StatePatch, {"rev": move[0], "fsm": move[1]})

    def move(self) -> tuple[int, str] | None:
        """``(sp.rev, sp.fsm)``, validated as :attr:`sp` is, without building the model
        (the driver's hot path); ``None`` when there is no ``sp``.
        """
        d = self.d
        if d is None or "sp" not in d:
            return None
        sp = d["sp"]
        # The exact shape every envelope built by ``ok`` has: checked by hand, which is
        # what the validator would do, at a tenth of its cost. Anything else (coercible
        # or wrong) goes through the validator, so it is accepted or refused as before.
        if type(sp) is dict and len(sp) == 2:
            rev, fsm = sp.get("rev"), sp.get("fsm")
            if type(rev) is int and rev >= 0 and type(fsm) is str and fsm:
                return rev, fsm
        patch = StatePatch.model_validate(sp)
        return patch.rev, patch.fsm

    @property
    def data(self) -> dict[str, Any]:
        """``d`` without ``sp``: the skill's own output."""
        if self.d is None:
            return {}
        data = dict(self.d)  # a copy and one delete: a third of a comprehension's cost
        data.pop("sp", None)
        return data

    @classmethod
    def ok(cls, data: Mapping[str, Any], *, rev: int, fsm: str) -> Envelope:
        """Success: ``data`` (already JSON-shaped) with ``sp`` appended last."""
        d = dict(data)
        d.pop("sp", None)
        d["sp"] = {"rev": rev, "fsm": fsm}
        for key in d:
            if type(key) is not str:  # what validation refuses: let it say so
                return cls(s="ok", d=d, e=None, rb="none")
        # Every other field is a constant here, and ``d`` is a fresh dict with string
        # keys: exactly what validation would accept, so it is not run again.
        return trusted(cls, {"s": "ok", "d": d, "e": None, "rb": "none"})

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



# Re-exported so callers can catch validation failures without importing pydantic.
EnvelopeValidationError = ValidationError
