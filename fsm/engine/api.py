"""The public API for custom machines: states, moves and skills in a few lines.

A custom machine is the same engine as the claim-verification one: a
:class:`~claimfsm.engine.machine.MachineDef` run by a :class:`~claimfsm.engine.driver.Driver` over
any
:class:`~claimfsm.state.store.StateStore`, so it gets the store, rollback, fork, fsck and replay
for free. This module only removes the boilerplate:

- :func:`skill` turns a function ``(inp: MemoryInput, ctx) -> Envelope`` into a
  :class:`~claimfsm.skills.base.Skill` whose input is the session's claim, config and memory;
- :meth:`MemoryInput.ok` builds the success envelope (``sp`` is ``st.rev + 1``) whose
  data is merged into the session's ``memory``;
- :func:`define_machine` checks the definition and returns a :class:`Workflow`, which
  builds drivers (``wf.driver(store)``).

See ``docs/api.md`` for the 20-line example the benchmark's no-op workflow uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from pydantic import ConfigDict

from claimfsm._base.models import builder
from claimfsm.engine.bindings import Binding
from claimfsm.engine.driver import Driver
from claimfsm.engine.errors import MachineDefinitionError
from claimfsm.engine.machine import MachineDef, RetryPolicy, StateSpec, WaitSpec
from claimfsm.engine.version import Migration, OnVersion, Versioning, machine_version
from claimfsm.skills.base import BaseIO, Skill, StRef
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope, Rollback
from claimfsm.state.model import SessionState
from claimfsm.state.model import trusted as trusted_state
from claimfsm.state.store import StateStore

__all__ = [
    "MemoryInput",
    "MemoryOutput",
    "Workflow",
    "define_machine",
    "linear",
    "memory_skill_binding",
    "skill",
    "wait",
]

Handler = Callable[["MemoryInput", SkillContext], Envelope]


class MemoryInput(BaseIO):
    """What a custom skill sees: the session's claim (its input), config and memory."""

    claim: str
    config: dict[str, Any]
    memory: dict[str, Any]
    st: StRef

    def ok(self, to: str, **data: Any) -> Envelope:
        """Success, moving to ``to``; ``data`` is merged into the session's memory."""
        # What ``Envelope.ok`` builds, without its checks: keyword arguments are a fresh
        # dict with string keys, so ``d`` is already what validation would accept.
        data.pop("sp", None)
        data["sp"] = {"rev": self.st.rev + 1, "fsm": to}
        return _envelope({"s": "ok", "d": data, "e": None, "rb": "none"})

    def error(self, code: str, msg: str, *, rb: Rollback = "none") -> Envelope:
        """An expected failure (``rb``: what to roll back)."""
        return Envelope.error(code, msg, rb=rb)


_envelope = builder(Envelope)
_input = builder(MemoryInput)
_st = builder(StRef)


class MemoryOutput(BaseIO):
    """A custom skill's ``d``: any JSON object (it is merged into memory)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="allow")


def skill(
    name: str | None = None, *, rb_on_error: Rollback = "state", description: str = "",
    version: str = "1", digests: Mapping[str, str] | None = None,
) -> Callable[[Handler], Skill[MemoryInput, MemoryOutput]]:
    """Decorator: a handler ``(inp: MemoryInput, ctx) -> Envelope`` as a named skill
    (default name: the function's).

    ``version``: bump it by hand when the skill's behaviour changes (it is part of the
    machine's version, docs/versioning.md); ``digests``: ``{label: sha256 hex}`` of files
    the skill reads (a prompt, a model; see
    :func:`claimfsm.skills.versions.content_digest`), part of the version too.
    """

    def wrap(fn: Handler) -> Skill[MemoryInput, MemoryOutput]:
        return Skill(
            name=name or fn.__name__, input_model=MemoryInput, output_model=MemoryOutput,
            handler=fn, rb_on_error=rb_on_error,
            description=description or (fn.__doc__ or "").strip(), version=str(version),
            digests=tuple(sorted((digests or {}).items())),
        )

    return wrap


def wait(
    input_model: type[Any], *, timeout: float | None = None, on_timeout: str | None = None,
    moves: Iterable[str] | None = None, route: Callable[[Any], str] | None = None,
    apply: Callable[[SessionState, Any, str], dict[str, Any]] | None = None,
) -> WaitSpec:
    """A wait state for :func:`define_machine`: no skill; the session holds (status
    ``WAITING``) until a person's input, validated against ``input_model`` (a pydantic
    model), is committed with ``Driver.input`` / ``claimfsm input``.

    ``moves`` are the states the input may choose (default: every declared move out of
    the state but ``on_timeout``); with more than one, ``route(input) -> state`` picks.
    ``timeout`` (seconds) and ``on_timeout`` go together: once it passes, ``claimfsm
    tick`` moves the session there. ``apply(state, input, actor) -> {field: value}``
    folds the input into the state (default: its fields merged into ``memory``).
    """
    return WaitSpec(input_model, tuple(moves) if moves is not None else (),
                    timeout_s=timeout, on_timeout=on_timeout, route=route, apply=apply)


def _memory_in(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
    return {"claim": state.claim, "config": state.config, "memory": state.memory, "st": st}


def _memory_model(inp: dict[str, Any]) -> MemoryInput:
    # Every value is the session state's own (validated when it entered) or the engine's
    # ``st`` (a fresh dict per step): the model is built as is. The state's dicts are
    # copied, as validation would, so a skill that mutates its input cannot reach into a
    # stored revision.
    return _input({"claim": inp["claim"], "config": dict(inp["config"]),
                   "memory": dict(inp["memory"]), "st": _st(inp["st"])})


def _memory_patch(state: SessionState, d: dict[str, Any], to: str) -> dict[str, Any]:
    return {"memory": {**state.memory, **d}} if d else {}


def _memory_apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
    if not d:
        return state
    return trusted_state(SessionState, {**state.__dict__, **_memory_patch(state, d, to)})


def memory_skill_binding(sk: Skill[Any, Any]) -> Binding:
    """The binding :func:`define_machine` gives a skill: input ``{claim, config, memory,
    st}``; ``d`` (without ``sp``) merged into ``memory``.
    """
    build = _memory_model if sk.input_model is MemoryInput else None
    return Binding(sk, _memory_in, _memory_apply, build, _memory_patch)


@dataclass(frozen=True)
class Workflow:
    """A checked custom machine and its bindings; :meth:`driver` runs it over a store."""

    definition: MachineDef
    bindings: Mapping[str, Binding] = field(default_factory=dict)
    #: Old version -> the function that maps a session state of it to this definition's.
    migrations: Mapping[str, Migration] = field(default_factory=dict)

    @property
    def version(self) -> str:
        """This definition's version: a digest of its states, moves, retry policies and
        each bound skill's declared version and file digests (docs/versioning.md)."""
        return machine_version(self.definition, self.bindings)

    def driver(self, store: StateStore, *, on_version: OnVersion = "refuse",
               registered: Iterable[Workflow] = (), **options: Any) -> Driver:
        """A :class:`~claimfsm.engine.driver.Driver` of this machine over ``store``; ``options`` go
        to the driver (``clock``, ``new_sid``, ``tools``, ``sleep``, ``on_step``, ...).

        A session started on another version is refused (``VERSION_MISMATCH``) unless
        this workflow migrates it (``migrations``), one of ``registered`` (older
        definitions kept side by side) is that version, which then runs it, or
        ``on_version="continue"``.
        """
        older = {wf.version: wf.driver(store, **options) for wf in registered}
        versioning = Versioning(self.version, dict(self.migrations), on_version)
        return Driver(store, machine=self.definition, bindings=self.bindings,
                      versioning=versioning, registered=older, **options)


def define_machine(
    name: str,
    *,
    states: Mapping[str, Skill[Any, Any] | Binding | WaitSpec | None],
    transitions: Iterable[tuple[str, str]],
    initial: str | None = None,
    failure: str | None = None,
    retry: Mapping[str, RetryPolicy] | None = None,
    migrations: Mapping[str, Migration] | None = None,
    editable: Iterable[str] = (),
) -> Workflow:
    """A checked :class:`Workflow`.

    ``states`` maps each state to its skill (a :class:`~claimfsm.skills.base.Skill`, or a
    :class:`~claimfsm.engine.bindings.Binding` for a custom state mapping), to
    :func:`wait` for a wait state, or to ``None`` for a final state; declaration order is
    kept. ``editable`` names the state fields ``claimfsm edit`` may change while a
    session holds (``memory``; ``memory.*`` for one key). ``initial`` defaults to the first state.
    ``failure`` names the final state errors lead to; ``retry`` gives per-state
    :class:`~claimfsm.engine.machine.RetryPolicy`. ``migrations`` maps an older version
    of this machine to a function ``(SessionState) -> SessionState`` that carries its
    sessions over, as one recorded revision (``Migrated`` event). Raises
    :class:`~claimfsm.engine.errors.MachineDefinitionError` listing every problem.
    """
    retry = retry or {}
    transitions = tuple(transitions)
    specs: list[StateSpec] = []
    bindings: dict[str, Binding] = {}
    problems = [f"retry policy for unknown state {s!r}" for s in retry if s not in states]
    problems += [f"migrations: {old!r} -> not a function" for old, fn in (migrations or {}).items()
                 if not callable(fn)]
    for state, bound in states.items():
        if bound is None:
            specs.append(StateSpec(state, final=True))
            continue
        if isinstance(bound, WaitSpec):
            if not bound.moves:  # default: every move out but the timeout's
                outs = tuple(d for s, d in transitions if s == state and d != bound.on_timeout)
                bound = WaitSpec(bound.input_model, outs, bound.timeout_s, bound.on_timeout,
                                 bound.route, bound.apply)
            specs.append(StateSpec(state, wait=bound))
            continue
        binding = bound if isinstance(bound, Binding) else memory_skill_binding(bound)
        sk = binding.skill.name
        if sk in bindings and bindings[sk].skill is not binding.skill:
            problems.append(f"two different skills are named {sk!r}")
        bindings[sk] = binding
        specs.append(StateSpec(state, skill=sk, retry=retry.get(state, RetryPolicy())))
    if not specs:
        problems.append("no states")
    if problems:
        raise MachineDefinitionError(
            f"machine {name!r} is invalid: " + "; ".join(problems), problems=problems
        )
    definition = MachineDef(
        name=name, states=tuple(specs), transitions=transitions,
        initial=initial if initial is not None else specs[0].name, failure=failure,
        editable=tuple(editable),
    ).validate()
    return Workflow(definition, bindings, dict(migrations or {}))


def linear(names: Iterable[str], end: str = "DONE") -> list[tuple[str, str]]:
    """The moves of a straight pipeline: each state to the next, the last to ``end``."""
    seq = [*names, end]
    return list(pairwise(seq))
