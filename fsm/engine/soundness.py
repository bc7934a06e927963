"""Whether a machine definition is sound: the checks behind :meth:`MachineDef.problems
<claimfsm.engine.machine.MachineDef.problems>` and :meth:`WaitSpec.problems
<claimfsm.engine.machine.WaitSpec.problems>`.

python-statemachine's definition checks (duplicate or unknown states, final states with
moves out, states unreachable from the initial one, traps that reach no final state) and
the contract of each wait state. Its own module because it is graph analysis run once per
definition, apart from the data classes and the façade that fires every move.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from claimfsm.engine.machine import MachineDef, WaitSpec

__all__ = ["definition_problems", "wait_problems"]


def wait_problems(wait: WaitSpec, name: str, targets: tuple[str, ...]) -> list[str]:
    """What is wrong with ``wait`` in state ``name`` whose moves are ``targets``."""
    out: list[str] = []
    if not isinstance(wait.input_model, type) or not hasattr(wait.input_model,
                                                             "model_validate"):
        out.append(f"wait state {name}: the input model is not a pydantic model")
    if not wait.moves:
        out.append(f"wait state {name}: input chooses no move (moves=...)")
    for move in wait.moves:
        if move not in targets:
            out.append(f"wait state {name}: input move {name}->{move} is not a transition")
    if len(wait.moves) > 1 and wait.route is None:
        out.append(f"wait state {name}: {len(wait.moves)} moves and no route")
    if (wait.timeout_s is None) != (wait.on_timeout is None):
        out.append(f"wait state {name}: timeout and on_timeout go together")
    if wait.timeout_s is not None and not wait.timeout_s > 0:
        out.append(f"wait state {name}: timeout must be positive")
    if wait.on_timeout is not None and wait.on_timeout not in targets:
        out.append(f"wait state {name}: on_timeout move {name}->{wait.on_timeout} "
                   "is not a transition")
    return out


def definition_problems(definition: MachineDef) -> list[str]:
    """Every problem of ``definition`` (empty when the machine is sound)."""
    out: list[str] = []
    names = definition.names
    known = set(names)
    if len(known) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        out.append(f"duplicate states: {', '.join(dup)}")
    if definition.initial not in known:
        out.append(f"initial state {definition.initial!r} is not a declared state")
    if definition.failure is not None and definition.failure not in definition.finals:
        out.append(f"failure state {definition.failure!r} is not a final state")
    if not definition.finals:
        out.append("no final state")
    for src, dst in definition.transitions:
        for end in (src, dst):
            if end not in known:
                out.append(f"transition {src}->{dst} names unknown state {end!r}")
    if len(set(definition.transitions)) != len(definition.transitions):
        out.append("duplicate transitions")
    for spec in definition.states:
        if spec.final and definition.targets(spec.name):
            out.append(f"final state {spec.name} has outgoing transitions")
        if spec.wait is not None:
            if spec.skill or spec.final:
                out.append(f"wait state {spec.name} binds a skill or is final")
            out.extend(spec.wait.problems(spec.name, definition.targets(spec.name)))
        elif not spec.final and not spec.skill:
            out.append(f"non-final state {spec.name} binds no skill")
        if spec.final and spec.skill:
            out.append(f"final state {spec.name} binds a skill")
    if out:
        return out
    reach = _reachable(definition.initial, definition.transitions)
    for n in names:
        if n not in reach:
            out.append(f"state {n} is unreachable from {definition.initial}")
    for spec in definition.states:
        if not spec.final and not (_reachable(spec.name, definition.transitions)
                                   & definition.finals):
            out.append(f"state {spec.name} cannot reach a final state (trap)")
    return out


def _reachable(start: str, edges: Iterable[tuple[str, str]]) -> set[str]:
    adj: dict[str, list[str]] = {}
    for s, d in edges:
        adj.setdefault(s, []).append(d)
    seen = {start}
    todo = deque([start])
    while todo:
        for nxt in adj.get(todo.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
