"""Paths through a machine's definition, for tests that walk every transition.

Like XState's graph utilities: :func:`shortest_paths` (one shortest path from the initial
state to each reachable state), :func:`simple_paths` (every path that visits no state
twice, from the initial state to a final state), and :func:`transition_coverage` (for
every declared transition, a path from the initial state through it to a final state,
so self-loops and cycles are covered too).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from claimfsm.engine.machine import MachineDef

__all__ = ["Path", "shortest_paths", "simple_paths", "transition_coverage", "uncovered"]


@dataclass(frozen=True)
class Path:
    """A walk through the machine as the states it visits, first to last."""

    states: tuple[str, ...]

    @property
    def start(self) -> str:
        """The first state."""
        return self.states[0]

    @property
    def end(self) -> str:
        """The last state."""
        return self.states[-1]

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """The transitions taken, in order."""
        return tuple(zip(self.states, self.states[1:], strict=False))

    def __len__(self) -> int:
        return len(self.states) - 1

    def __str__(self) -> str:
        return " -> ".join(self.states)


def _adjacency(definition: MachineDef) -> dict[str, list[str]]:
    adj: dict[str, list[str]] = {name: [] for name in definition.names}
    for src, dst in definition.transitions:
        adj[src].append(dst)
    return adj


def _bfs(definition: MachineDef, start: str) -> dict[str, tuple[str, ...]]:
    """Shortest paths from ``start`` to every state it reaches (declaration order breaks
    ties, so the result is deterministic)."""
    adj = _adjacency(definition)
    paths: dict[str, tuple[str, ...]] = {start: (start,)}
    todo = deque([start])
    while todo:
        here = todo.popleft()
        for nxt in adj[here]:
            if nxt not in paths:
                paths[nxt] = (*paths[here], nxt)
                todo.append(nxt)
    return paths


def shortest_paths(definition: MachineDef) -> dict[str, Path]:
    """One shortest path from the initial state to each reachable state."""
    return {state: Path(p) for state, p in _bfs(definition, definition.initial).items()}


def simple_paths(definition: MachineDef, *, to: Iterable[str] | None = None) -> list[Path]:
    """Every path from the initial state that visits no state twice and ends in one of
    ``to`` (default: the final states), in depth-first declaration order."""
    targets = frozenset(definition.finals if to is None else to)
    adj = _adjacency(definition)
    out: list[Path] = []

    def walk(trail: tuple[str, ...]) -> None:
        here = trail[-1]
        if here in targets:
            out.append(Path(trail))
        for nxt in adj[here]:
            if nxt not in trail:
                walk((*trail, nxt))

    walk((definition.initial,))
    return out


def transition_coverage(definition: MachineDef) -> list[Path]:
    """For each transition ``a -> b`` (declaration order): the shortest path to ``a``,
    the transition, then the shortest path from ``b`` to a final state."""
    to_source = _bfs(definition, definition.initial)
    out: list[Path] = []
    for src, dst in definition.transitions:
        if src not in to_source:
            continue  # unreachable: a validated machine has none
        onward = _bfs(definition, dst)
        finals = [s for s in definition.names if s in definition.finals and s in onward]
        if not finals:
            continue  # a trap: a validated machine has none
        best = min(finals, key=lambda s: len(onward[s]))
        out.append(Path((*to_source[src], *onward[best])))
    return out


def uncovered(definition: MachineDef, paths: Iterable[Path]) -> list[tuple[str, str]]:
    """Declared transitions that no path in ``paths`` takes."""
    taken = {edge for p in paths for edge in p.edges}
    return [t for t in definition.transitions if t not in taken]
