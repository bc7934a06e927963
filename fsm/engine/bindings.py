"""How each bound skill meets the session state: state -> input, and ``d`` -> state.

Skills never see or write :class:`SessionState`; the driver calls ``to_input(state, st)``
to build a skill's input and ``apply(state, d, to)`` to fold the skill's output (``d``
without ``sp``) back in, ``to`` being the FSM state the step moves to (``sp.fsm``).
A custom machine supplies its own bindings (see :func:`memory_binding`); the
claim-verification machine's mappings are in :mod:`claimfsm.engine.claim_io`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from claimfsm._base.record import Record
from claimfsm.engine.claim_io import flatten_facts, flatten_hits, skill_table
from claimfsm.skills.base import Skill
from claimfsm.state.model import SessionState

# flatten_hits and flatten_facts live in claimfsm.engine.claim_io (the mappings that read
# them) and are exported here too, where they have always been imported from.
__all__ = [
    "BINDABLE",
    "DEFAULT_BINDINGS",
    "Binding",
    "flatten_facts",
    "flatten_hits",
    "make_bindings",
    "memory_binding",
]

ToInput = Callable[[SessionState, dict[str, Any]], dict[str, Any]]
Apply = Callable[[SessionState, dict[str, Any], str], SessionState]
Build = Callable[[dict[str, Any]], Any]
Patch = Callable[[SessionState, dict[str, Any], str], dict[str, Any]]
Route = Callable[[SessionState, dict[str, Any], str], str]


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Binding(Record, frozen=True):
    """A skill plus the two mappings between it and the session state.

    ``build`` (optional) makes the skill's input model from ``to_input``'s dict without
    validating it, for bindings whose input holds only values of the (already valid)
    state and the engine's ``st``; without it the skill validates its input as usual.

    ``patch`` (optional) is ``apply`` as the fields it changes (``{field: value}``, each
    value already valid): the driver then builds the step's one new state from the
    parent, the patch and its own fields, instead of a state from ``apply`` and a copy
    of it. With a patch, ``apply(state, d, to)`` must equal the state with those fields.

    ``route`` (optional) may send an ok step elsewhere than its ``sp.fsm``, from the
    session's config and the step's ``d`` (AGGREGATE's to REVIEW, per the profile's
    ``review``); the driver commits the routed move, which must be a declared one.
    """

    skill: Skill[Any, Any]
    to_input: ToInput
    apply: Apply
    build: Build | None = None
    patch: Patch | None = None
    route: Route | None = None

    def __init__(self, skill: Skill[Any, Any], to_input: ToInput, apply: Apply,
                 build: Build | None = None, patch: Patch | None = None,
                 route: Route | None = None) -> None:
        self._fill(skill=skill, to_input=to_input, apply=apply, build=build, patch=patch,
                   route=route)


def memory_binding(skill: Skill[Any, Any]) -> Binding:
    """A generic binding for custom machines: input ``{memory, st}``; ``d`` merges into memory."""

    def to_input(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
        return {"memory": dict(state.memory), "st": st}

    def apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
        return state.model_copy(update={"memory": {**state.memory, **d}})

    return Binding(skill, to_input, apply)


#: Skills that take tools bound to their state (the tools get one request per query).
BINDABLE: frozenset[str] = frozenset({"retrieve"})


def make_bindings(tools: Mapping[str, Sequence[str]] | None = None) -> Mapping[str, Binding]:
    """Bindings of the claim-verification machine, keyed by skill name.

    ``tools`` maps a skill name to extra tools bound to it; only ``retrieve`` (RETRIEVAL)
    takes them, and each gets one request per planned query. Anything else is a
    :class:`ToolDefinitionError` naming the skill.
    """
    bound = dict(tools or {})
    for skill, names in bound.items():
        if skill not in BINDABLE and names:
            from claimfsm.skills.tools.core import ToolDefinitionError

            raise ToolDefinitionError(
                str(next(iter(names))), f"skill {skill!r} takes no bound tools "
                f"(bind tools to: {', '.join(sorted(BINDABLE))})",
            )
    return _Bindings(skill_table(bound.get("retrieve", ())))


#: Skills a profile may back with a model: their module runs the deterministic skill
#: unless the input names a model (claimfsm.engine.model_profile).
_MODEL_BACKED: Mapping[str, str] = {"parse_claim": "model_planner",
                                    "stance_judge": "model_judge"}


class _Bindings(Mapping[str, Binding]):
    """The claim-verification bindings, each skill's module imported when its binding is
    first used: a command that steps one session imports one skill, not all of them
    (the module of skill ``name`` is ``skills.<name>``, or its model-backed module of
    ``_MODEL_BACKED``; its skill ``SKILL``).
    """

    def __init__(self, table: Mapping[str, tuple[Any, ...]]) -> None:
        self._table = dict(table)
        self._made: dict[str, Binding] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Binding:
        made = self._made.get(name)
        if made is not None:
            return made
        to_input, apply, *route = self._table[name]  # KeyError for a skill it does not bind
        module = _MODEL_BACKED.get(name, name)
        skill = importlib.import_module(f"claimfsm.skills.{module}").SKILL
        made = Binding(skill, to_input, apply, route=route[0] if route else None)
        with self._lock:
            return self._made.setdefault(name, made)

    def __contains__(self, name: object) -> bool:
        return name in self._table  # without importing the skill (Mapping's would)

    def declared(self, name: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """``(version, file digests)`` skill ``name`` declares, without importing it (a
        machine's version is known before any skill runs)."""
        from claimfsm.skills.versions import declared

        return declared(name)

    def __reduce__(self) -> tuple[Any, ...]:  # pickles as its table (the lock does not)
        return (_Bindings, (self._table,))

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


#: Bindings of the claim-verification machine, keyed by skill name.
DEFAULT_BINDINGS: Mapping[str, Binding] = make_bindings()
