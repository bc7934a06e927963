"""The value classes declared with :class:`claimfsm._base.record.Record` behave as the
``@dataclass`` they replaced: each is checked against a dataclass generated from its own
fields (same repr, equality, hash, frozenness, defaults, signature, ``replace``, pickle),
and none carries a method compiled from generated source."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pickle
import re
from typing import Any

import pytest

from claimfsm._base.record import FACTORY, Record

#: Every Record class, with whether the dataclass it replaced was frozen.
FROZEN: dict[str, bool] = {
    "claimfsm.engine.bindings.Binding": True,
    "claimfsm.engine.firing.CompiledMachine": False,
    "claimfsm.engine.limits.SessionLimits": True,
    "claimfsm.engine.machine.MachineDef": True,
    "claimfsm.engine.machine.RetryPolicy": True,
    "claimfsm.engine.machine.StateSpec": True,
    "claimfsm.engine.machine.WaitSpec": True,
    "claimfsm.engine.runtime.Engine": False,
    "claimfsm.engine.sources.SourceSet": True,
    "claimfsm.engine.step.StepResult": False,
    "claimfsm.engine.version.Versioning": True,
    "claimfsm.skills.analysis.terms.Analysis": True,
    "claimfsm.skills.analysis.terms.Term": True,
    "claimfsm.skills.analysis.terms.Tok": True,
    "claimfsm.skills.base.Skill": True,
    "claimfsm.skills.context.FixedClock": False,
    "claimfsm.skills.context.SeqIds": False,
    "claimfsm.skills.context.SkillContext": False,
    "claimfsm.skills.model_call.ModelFailure": True,
    "claimfsm.skills.tools.bm25._Corpus": False,
    "claimfsm.skills.tools.core.Tool": True,
    "claimfsm.skills.tools.core.ToolContext": False,
    "claimfsm.skills.tools.core.ToolExample": True,
    "claimfsm.skills.tools.core.ToolResult": True,
    "claimfsm.skills.tools.gather._Slot": False,
    "claimfsm.skills.tools.inflight.Attempt": False,
    "claimfsm.skills.tools.limits.RateLimit": True,
    "claimfsm.skills.tools.model_http.HttpAnswer": True,
    "claimfsm.skills.tools.policies.FetchBeforeExtractPolicy": True,
    "claimfsm.skills.tools.policies.PolicyDecision": True,
    "claimfsm.skills.tools.policies.SequentialDependencyPolicy": True,
    "claimfsm.skills.tools.vectors._Matrix": True,
    "claimfsm.state.open.Location": True,
}


def _load(path: str) -> type[Any]:
    module, name = path.rsplit(".", 1)
    cls: type[Any] = getattr(importlib.import_module(module), name)
    return cls


def _subclasses(cls: type[Any]) -> set[type[Any]]:
    out = set(cls.__subclasses__())
    for sub in list(out):
        out |= _subclasses(sub)
    return out


def test_the_table_names_every_record_class() -> None:
    classes = {_load(path) for path in FROZEN}
    assert classes == _subclasses(Record)


def _reference(cls: type[Any], frozen: bool) -> type[Any]:
    """The dataclass ``cls`` was: its fields, generated methods."""
    specs = []
    for f in dataclasses.fields(cls):
        spec = dataclasses.field(default=f.default, default_factory=f.default_factory,
                                 repr=f.repr, compare=f.compare, hash=f.hash)
        specs.append((f.name, Any, spec))
    ref = dataclasses.make_dataclass(cls.__name__, specs, frozen=frozen, eq=True)
    ref.__qualname__ = cls.__qualname__
    return ref


def _values(cls: type[Any], tag: str) -> list[Any]:
    # Upper-case text: a ToolResult's code must be UPPER_SNAKE; any value fits the rest.
    return [f"{tag}{n}" for n, _ in enumerate(dataclasses.fields(cls))]


def _masked(obj: Any) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x", repr(obj))  # a default's own object's address


def _state(obj: Any) -> list[Any]:
    return [getattr(obj, f.name) for f in dataclasses.fields(obj)]


@pytest.mark.parametrize("path", sorted(FROZEN))
def test_a_record_behaves_as_its_dataclass(path: str) -> None:
    cls = _load(path)
    frozen = FROZEN[path]
    ref = _reference(cls, frozen)
    values, other = _values(cls, "V"), _values(cls, "W")
    obj, twin, ref_obj = cls(*values), cls(*values), ref(*values)
    names = [f.name for f in dataclasses.fields(cls)]

    assert repr(obj) == repr(ref_obj)
    assert obj == twin and obj == cls(**dict(zip(names, values, strict=True)))
    assert obj != cls(*values[:-1], other[-1]) and obj != cls(other[0], *values[1:])
    assert obj != ref_obj and (obj == ref_obj) is (ref_obj == obj)  # another class
    assert _state(dataclasses.replace(obj, **{names[0]: other[0]})) == [other[0], *values[1:]]
    assert dataclasses.asdict(obj) == dataclasses.asdict(ref_obj)
    assert pickle.loads(pickle.dumps(obj)) == obj

    if frozen:
        assert hash(obj) == hash(ref_obj) == hash(twin)
        with pytest.raises(dataclasses.FrozenInstanceError, match=f"field {names[0]!r}"):
            setattr(obj, names[0], other[0])
        with pytest.raises(dataclasses.FrozenInstanceError, match=f"field {names[0]!r}"):
            delattr(obj, names[0])
    else:
        with pytest.raises(TypeError, match="unhashable"):
            hash(obj)
        setattr(obj, names[0], other[0])
        assert getattr(obj, names[0]) == other[0]

    # The same signature, defaults included (a factory's default is FACTORY here).
    mine = list(inspect.signature(cls.__init__).parameters.values())[1:]
    theirs = list(inspect.signature(ref.__init__).parameters.values())[1:]
    assert [(p.name, p.kind) for p in mine] == [(p.name, p.kind) for p in theirs]
    for p, q, f in zip(mine, theirs, dataclasses.fields(cls), strict=True):
        if f.default_factory is not dataclasses.MISSING:
            assert p.default is FACTORY
        else:
            assert p.default is q.default or p.default == q.default
    # Defaults: what the generated __init__ gives, fresh for each instance.
    required = [v for v, p in zip(values, theirs, strict=True) if p.default is p.empty]
    if len(required) < len(values) and not path.endswith(("Engine", "FixedClock")):
        first, second, expected = cls(*required), cls(*required), ref(*required)
        assert _masked(first) == _masked(expected)
        for a, b, f in zip(_state(first), _state(second), dataclasses.fields(cls), strict=True):
            if f.default_factory is not dataclasses.MISSING:
                assert a is not b or isinstance(a, (tuple, frozenset))


def test_the_defaults_that_need_a_live_value() -> None:
    from datetime import UTC, datetime, timedelta

    from claimfsm.engine.profile import Profile
    from claimfsm.engine.runtime import Engine
    from claimfsm.skills.context import FixedClock

    clock = FixedClock()
    assert clock.current == datetime(2026, 1, 1, tzinfo=UTC) and clock.tick == timedelta()
    engine = Engine(None, None, None)  # type: ignore[arg-type]
    assert engine.profile == Profile.default() and engine.warnings == ()


@pytest.mark.parametrize("path", sorted(FROZEN))
def test_no_method_is_compiled_from_generated_source(path: str) -> None:
    cls = _load(path)
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        method = getattr(cls, name)
        code = getattr(method, "__code__", None)
        assert code is None or code.co_filename != "<string>", f"{path}.{name}"


def test_a_tool_result_still_refuses_a_code_that_is_not_upper_snake() -> None:
    from claimfsm._base.errors import BadInput
    from claimfsm.skills.tools.core import ToolResult

    with pytest.raises(BadInput, match="not UPPER_SNAKE"):
        ToolResult(False, None, "", "lower")
    assert ToolResult.error("x", "RATE_LIMITED").code == "RATE_LIMITED"
