"""The machine as data, checked when built, behind a small typed façade over ``transitions``.

A :class:`MachineDef` lists states (each non-final one binds a skill and may carry a retry
policy) and allowed moves. :meth:`MachineDef.validate` applies python-statemachine's
definition checks (:mod:`claimfsm.engine.soundness`); :class:`Machine` wraps a
``transitions`` machine with no auto transitions, so an illegal move raises
:class:`IllegalTransition`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from transitions import MachineError

from claimfsm._base.record import FACTORY, Record
from claimfsm.engine.errors import IllegalTransition, MachineDefinitionError, UnknownState
from claimfsm.engine.firing import build_engine, cached_engine, trigger_name
from claimfsm.engine.review import ReviewInput, apply_review, route_review
from claimfsm.engine.soundness import definition_problems, wait_problems

__all__ = [
    "DEFAULT_MACHINE",
    "Machine",
    "MachineDef",
    "RetryPolicy",
    "StateSpec",
    "WaitSpec",
    "mermaid",
]


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class RetryPolicy(Record, frozen=True):
    """Which error codes are retried in a state, how often, and with what backoff.

    Like Step Functions' ``Retry``: attempt ``n`` waits ``min(cap_s, backoff_s * factor**(n-1))``.
    """

    codes: frozenset[str] = frozenset()
    max_attempts: int = 3
    backoff_s: float = 1.0
    factor: float = 2.0
    cap_s: float = 30.0

    def __init__(self, codes: frozenset[str] = frozenset(), max_attempts: int = 3,
                 backoff_s: float = 1.0, factor: float = 2.0, cap_s: float = 30.0) -> None:
        self._fill(codes=codes, max_attempts=max_attempts, backoff_s=backoff_s, factor=factor,
                   cap_s=cap_s)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt + 1``."""
        return float(min(self.cap_s, self.backoff_s * self.factor ** max(0, attempt - 1)))


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class WaitSpec(Record, frozen=True):
    """A wait state's contract: the input model a person's input must match, the moves
    that input may choose (``route`` picks one from the validated input; with one move
    and no ``route``, that move), an optional ``timeout_s`` and the move taken when it
    passes (``on_timeout``), and ``apply`` (``(state, input) -> {field: value}``), which
    folds the input into the state (default: into ``memory`` under the state's name).
    """

    input_model: type[Any]
    moves: tuple[str, ...] = ()
    timeout_s: float | None = None
    on_timeout: str | None = None
    route: Any = None
    apply: Any = None

    def __init__(self, input_model: type[Any], moves: tuple[str, ...] = (),
                 timeout_s: float | None = None, on_timeout: str | None = None,
                 route: Any = None, apply: Any = None) -> None:
        self._fill(input_model=input_model, moves=moves, timeout_s=timeout_s,
                   on_timeout=on_timeout, route=route, apply=apply)

    def problems(self, name: str, targets: tuple[str, ...]) -> list[str]:
        """What is wrong with this wait in state ``name`` whose moves are ``targets``."""
        return wait_problems(self, name, targets)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class StateSpec(Record, frozen=True):
    """One state: its name, the skill it binds (non-final only), whether it is final,
    and for a wait state (no skill) what it waits for."""

    name: str
    skill: str | None = None
    final: bool = False
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    wait: WaitSpec | None = None

    def __init__(self, name: str, skill: str | None = None, final: bool = False,
                 retry: RetryPolicy = FACTORY, wait: WaitSpec | None = None) -> None:
        self._fill(name=name, skill=skill, final=final,
                   retry=RetryPolicy() if retry is FACTORY else retry, wait=wait)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class MachineDef(Record, frozen=True):
    """States and moves as data; ``failure`` is the final state errors lead to."""

    name: str
    states: tuple[StateSpec, ...]
    transitions: tuple[tuple[str, str], ...]
    initial: str
    failure: str | None = None
    #: Fields a person may edit while a session holds (``name.*``: any key of a dict
    #: field): ``claimfsm edit``, docs/review.md.
    editable: tuple[str, ...] = ()

    def __init__(self, name: str, states: tuple[StateSpec, ...],
                 transitions: tuple[tuple[str, str], ...], initial: str,
                 failure: str | None = None, editable: tuple[str, ...] = ()) -> None:
        self._fill(name=name, states=states, transitions=transitions, initial=initial,
                   failure=failure, editable=editable)

    def state(self, name: str) -> StateSpec:
        """The spec of ``name`` (:class:`UnknownState`, a ``KeyError``, if unknown)."""
        for spec in self.states:
            if spec.name == name:
                return spec
        raise UnknownState(f"machine {self.name!r} has no state {name!r}")

    # Cached: a definition is immutable, and the driver asks for these at every step
    # (a property rebuilt them from all states: a cost growing with the machine).
    @cached_property
    def names(self) -> tuple[str, ...]:
        """State names in declaration order."""
        return tuple(s.name for s in self.states)

    @cached_property
    def waits(self) -> dict[str, WaitSpec]:
        """The wait states and what each waits for."""
        return {s.name: s.wait for s in self.states if s.wait is not None}

    @cached_property
    def finals(self) -> frozenset[str]:
        """The final states."""
        return frozenset(s.name for s in self.states if s.final)

    def targets(self, source: str) -> tuple[str, ...]:
        """Where ``source`` may move, in declaration order."""
        return tuple(d for s, d in self.transitions if s == source)

    def problems(self) -> list[str]:
        """Every definition problem found (empty when the machine is sound)."""
        return definition_problems(self)

    def validate(self) -> MachineDef:
        """Raise :class:`MachineDefinitionError` listing every problem; return self."""
        found = self.problems()
        if found:
            raise MachineDefinitionError(
                f"machine {self.name!r} is invalid: " + "; ".join(found), problems=found
            )
        return self


class Machine:
    """A validated machine. ``move(src, dst)`` fires the ``transitions`` trigger or raises."""

    def __init__(self, definition: MachineDef) -> None:
        try:
            engine = cached_engine(definition)
        except TypeError:  # unhashable (lists where tuples belong): build a private one
            engine = build_engine(definition)
        self.definition = definition
        self._model, self._tm = engine.model, engine.tm
        self._allowed = frozenset(definition.transitions)
        self._names = frozenset(definition.names)
        self._events = {dst: engine.tm.events.get(trigger_name(dst)) for dst in definition.names}
        self._firing = engine.firing

    def can(self, src: str, dst: str) -> bool:
        """Whether ``src -> dst`` is a declared move."""
        return (src, dst) in self._allowed

    def move(self, src: str, dst: str) -> str:
        """Move ``src -> dst`` through ``transitions``: the state it lands in, or
        :class:`IllegalTransition`. Every move fires the trigger; none is answered from a
        cache, so ``transitions`` stays the engine of record."""
        return self.fire(src, dst)

    def fire(self, src: str, dst: str) -> str:
        """Fire the ``transitions`` trigger for ``src -> dst``; raise
        :class:`IllegalTransition` if it is not allowed.
        """
        if src not in self._names:
            raise IllegalTransition(f"unknown state {src!r}")
        event = self._events.get(dst)
        model = self._model
        with self._firing:  # one model, re-positioned per move: one move at a time
            if model.state != src:  # a session's moves chain: it is usually there already
                self._tm.set_state(src, model=model)
            try:
                if event is None:  # no move leads to ``dst``: what the trigger would say
                    raise AttributeError(trigger_name(dst))
                # The event the model's trigger method looks up, fired directly.
                event.trigger(model)
            except (MachineError, AttributeError) as exc:
                raise IllegalTransition(
                    f"no transition {src} -> {dst} (allowed: "
                    f"{', '.join(self.definition.targets(src)) or 'none'})"
                ) from exc
            landed: str = self._model.state
        return landed


def mermaid(definition: MachineDef) -> str:
    """A Mermaid ``stateDiagram-v2`` generated from the definition."""
    lines = ["stateDiagram-v2", f"    [*] --> {definition.initial}"]
    for spec in definition.states:
        if spec.skill:
            lines.append(f"    {spec.name} : {spec.skill}")
        elif spec.wait is not None:  # no skill: a person answers
            lines.append(f"    {spec.name} : waits for {spec.wait.input_model.__name__}")
    for src, dst in definition.transitions:
        lines.append(f"    {src} --> {dst}")
    for spec in definition.states:
        if spec.final:
            lines.append(f"    {spec.name} --> [*]")
    if definition.waits:  # drawn dashed: the session stops there until a person answers
        lines.append("    classDef waiting stroke-dasharray: 5 5")
        lines.extend(f"    class {name} waiting" for name in definition.waits)
    return "\n".join(lines) + "\n"


_WORK = ("PARSE_CLAIM", "RETRIEVAL", "EXTRACT", "VERIFY", "AGGREGATE")

#: The claim-verification machine (the single source of truth for the diagram).
DEFAULT_MACHINE = MachineDef(
    name="claim_verification",
    states=(
        StateSpec("PARSE_CLAIM", skill="parse_claim"),
        StateSpec(
            "RETRIEVAL",
            skill="retrieve",
            retry=RetryPolicy(codes=frozenset({"RATE_LIMITED", "TOOL_TIMEOUT"}), max_attempts=3),
        ),
        StateSpec("EXTRACT", skill="evidence_extract"),
        StateSpec("VERIFY", skill="stance_judge"),
        StateSpec("AGGREGATE", skill="verdict_aggregate"),
        # Entered only as the profile's ``review`` says (default never): docs/review.md.
        StateSpec("REVIEW", wait=WaitSpec(ReviewInput, moves=("DONE", "RETRIEVAL"),
                                          route=route_review, apply=apply_review)),
        StateSpec("DONE", final=True),
        StateSpec("FAILED", final=True),
    ),
    transitions=(
        ("PARSE_CLAIM", "RETRIEVAL"),
        ("RETRIEVAL", "RETRIEVAL"),
        ("RETRIEVAL", "EXTRACT"),
        ("EXTRACT", "VERIFY"),
        ("EXTRACT", "RETRIEVAL"),
        ("VERIFY", "AGGREGATE"),
        ("AGGREGATE", "DONE"),
        ("AGGREGATE", "REVIEW"),
        ("REVIEW", "DONE"),
        ("REVIEW", "RETRIEVAL"),
        *((s, "FAILED") for s in _WORK),
    ),
    initial="PARSE_CLAIM",
    failure="FAILED",
    # The subclaims, the query plans and the evidence kept for a subclaim.
    editable=("subclaims", "plans", "evidence.*"),
)
