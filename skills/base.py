"""The skill protocol: an Input model, an Output model and a pure handler.

Every skill module has the same shape::

    class Input(BaseModel): ...        # includes ``st`` (session ref)
    class Output(BaseModel): ...       # what goes into ``d`` (``sp`` is added)
    def handler(inp: Input, ctx: SkillContext) -> Envelope: ...
    SKILL = Skill(name=..., input_model=Input, output_model=Output, handler=handler, ...)

Expected failures come back as error envelopes; :meth:`Skill.run` turns malformed input
into ``BAD_INPUT`` and any exception into ``INTERNAL``, so callers never see a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from claimfsm._base.record import Record
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope, Rollback
from claimfsm.skills.limits import MAX_INPUT_BYTES, MAX_INT, too_large

__all__ = [
    "BaseIO",
    "Skill",
    "StRef",
    "describe_validation_error",
]


class BaseIO(BaseModel):
    """Base for skill Input/Output models: frozen, unknown fields refused."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")


class StRef(BaseIO):
    """``st``: which session, at which head revision, in which FSM state."""

    sid: str = Field(min_length=1)
    rev: int = Field(ge=0, le=MAX_INT)
    fsm: str = Field(min_length=1)


InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """A one-line message naming the first offending field (``plans.0.src.1: ...``)."""
    errors = exc.errors()
    if not errors:
        return "invalid input"
    first = errors[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{loc}: {first.get('msg', 'invalid')}{more}"


_TOO_LONG = {"string_too_long", "too_long"}


# An integer beyond MAX_INT has at least as many digits as MAX_INT itself: in the JSON
# with every digit turned into "0", a run of that many "0"s.
_ZEROED = bytes.maketrans(b"123456789", b"000000000")
_LONG_RUN = b"0" * len(str(MAX_INT))


def _huge_int(value: Any, path: str) -> str | None:
    # An integer a skill may echo or increment must stay serialisable: the first one out
    # of range, by its path. One walk over input already bounded by MAX_INPUT_BYTES, done
    # only when its JSON holds a digit run that long (otherwise no integer in it can be
    # out of range): serialised and scanned in C, ~5 times faster than the walk on a
    # 55 KB input.
    try:
        if orjson.dumps(value).translate(_ZEROED).find(_LONG_RUN) < 0:
            return None
    except TypeError:  # not plain JSON (or an integer orjson refuses): walk it
        pass
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if type(item) is int and not -MAX_INT <= item <= MAX_INT:
            return where
        if isinstance(item, Mapping):
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{where}.{i}" if where else str(i)) for i, v in enumerate(item))
    return None


def _refusal(exc: ValidationError) -> Envelope:
    # A size limit from the input model is INPUT_TOO_LARGE, every other problem BAD_INPUT.
    errors = exc.errors()
    first = errors[0] if errors else None
    if first is not None and first.get("type") in _TOO_LONG:
        loc = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
        ctx = first.get("ctx") or {}
        limit = ctx.get("max_length", "?")
        unit = "characters" if first["type"] == "string_too_long" else "items"
        return Envelope.error("INPUT_TOO_LARGE", f"{loc}: more than {limit} {unit}, "
                              f"the limit is {limit}", rb="none")
    return Envelope.error("BAD_INPUT", describe_validation_error(exc), rb="none")


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Skill(Record, Generic[InT, OutT], frozen=True):
    """A named skill: models, the handler, and the rollback its errors ask for."""

    name: str
    input_model: type[InT]
    output_model: type[OutT]
    handler: Callable[[InT, SkillContext], Envelope]
    rb_on_error: Rollback
    description: str
    #: Bumped by hand when the skill's behaviour changes: part of every machine version
    #: that binds it (docs/versioning.md).
    version: str = "1"
    #: ``(label, sha256 hex)`` of files the skill's behaviour depends on (a prompt, a
    #: model): their contents are part of the machine version too. See
    #: :func:`claimfsm.skills.versions.content_digest`.
    digests: tuple[tuple[str, str], ...] = ()

    def __init__(self, name: str, input_model: type[InT], output_model: type[OutT],
                 handler: Callable[[InT, SkillContext], Envelope], rb_on_error: Rollback,
                 description: str, version: str = "1",
                 digests: tuple[tuple[str, str], ...] = ()) -> None:
        self._fill(name=name, input_model=input_model, output_model=output_model,
                   handler=handler, rb_on_error=rb_on_error, description=description,
                   version=version, digests=digests)

    def parse(self, raw: bytes | str | Mapping[str, Any]) -> InT | Envelope:
        """Validate raw input; a ``BAD_INPUT`` envelope if it is malformed."""
        if isinstance(raw, (bytes, str)) and len(raw) > MAX_INPUT_BYTES:
            return too_large("(root)", len(raw), MAX_INPUT_BYTES, "bytes")
        try:
            obj = orjson.loads(raw) if isinstance(raw, (bytes, str)) else raw
        except orjson.JSONDecodeError as exc:
            return Envelope.error("BAD_INPUT", f"(root): malformed JSON: {exc}", rb="none")
        if not isinstance(obj, Mapping):
            return Envelope.error("BAD_INPUT", "(root): expected a JSON object", rb="none")
        where = _huge_int(obj, "")
        if where is not None:
            return Envelope.error("BAD_INPUT", f"{where or '(root)'}: an integer beyond "
                                  f"+-{MAX_INT} (the range every envelope can hold)", rb="none")
        try:
            return self.input_model.model_validate(dict(obj))
        except ValidationError as exc:
            return _refusal(exc)

    def run(self, raw: bytes | str | Mapping[str, Any] | InT, ctx: SkillContext) -> Envelope:
        """Parse (unless already a model), call the handler, never raise."""
        # The engine passes its own input model: an exact type check answers first
        # (``isinstance`` on a pydantic model class goes through ABCMeta's machinery).
        if type(raw) is not self.input_model:
            inp: InT | Envelope = raw if isinstance(raw, BaseModel) else self.parse(raw)
            if isinstance(inp, Envelope):
                return inp
            raw = inp
        try:
            return self.handler(raw, ctx)
        except Exception as exc:  # a bug in a skill must not take the engine down
            return Envelope.error(
                "INTERNAL", f"{self.name}: {type(exc).__name__}: {exc}", rb="none"
            )
