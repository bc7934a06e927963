"""Path enumeration over machine definitions, and driving every generated path."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from claimfsm.engine.machine import DEFAULT_MACHINE, MachineDef, StateSpec
from claimfsm.testing import drive_path
from claimfsm.testing.paths import (
    Path,
    shortest_paths,
    simple_paths,
    transition_coverage,
    uncovered,
)

M = DEFAULT_MACHINE


def test_shortest_paths_reach_every_state_by_the_fewest_moves() -> None:
    paths = shortest_paths(M)
    assert set(paths) == set(M.names)
    assert str(paths["DONE"]) == (
        "PARSE_CLAIM -> RETRIEVAL -> EXTRACT -> VERIFY -> AGGREGATE -> DONE")
    assert paths["FAILED"].states == ("PARSE_CLAIM", "FAILED")
    assert len(paths["PARSE_CLAIM"]) == 0


def test_simple_paths_never_repeat_a_state_and_end_in_a_final_state() -> None:
    paths = simple_paths(M)
    assert paths, "no simple paths"
    for p in paths:
        assert p.start == "PARSE_CLAIM" and p.end in M.finals
        assert len(set(p.states)) == len(p.states)
        assert all(edge in M.transitions for edge in p.edges)
    assert len({p.states for p in paths}) == len(paths)
    # One to DONE (the happy path), one through REVIEW to DONE, and one to FAILED from
    # each of the five working states along it, the EXTRACT -> RETRIEVAL and REVIEW ->
    # RETRIEVAL cycles not being simple.
    assert sorted(len(p) for p in paths) == [1, 2, 3, 4, 5, 5, 6]


def test_simple_paths_to_chosen_targets() -> None:
    paths = simple_paths(M, to=["VERIFY"])
    assert [str(p) for p in paths] == ["PARSE_CLAIM -> RETRIEVAL -> EXTRACT -> VERIFY"]


def test_transition_coverage_takes_every_transition_initial_to_final() -> None:
    paths = transition_coverage(M)
    assert uncovered(M, paths) == []
    assert len(paths) == len(M.transitions)
    for p in paths:
        assert p.start == M.initial and p.end in M.finals
        assert all(edge in M.transitions for edge in p.edges)
    loops = [p for p in paths if ("RETRIEVAL", "RETRIEVAL") in p.edges]
    assert loops and loops[0].states[:3] == ("PARSE_CLAIM", "RETRIEVAL", "RETRIEVAL")


def test_uncovered_lists_what_a_path_set_misses() -> None:
    only_happy = [shortest_paths(M)["DONE"]]
    missing = uncovered(M, only_happy)
    assert ("RETRIEVAL", "RETRIEVAL") in missing and ("EXTRACT", "RETRIEVAL") in missing
    assert ("PARSE_CLAIM", "RETRIEVAL") not in missing


@pytest.mark.parametrize("path", transition_coverage(M), ids=str)
def test_each_covering_path_drives_the_real_driver_to_its_end(path: Path) -> None:
    head = drive_path(path, M)
    assert head.fsm == path.end
    assert head.rev == len(path)  # one committed revision per transition


@pytest.mark.parametrize("path", simple_paths(M), ids=str)
def test_each_simple_path_drives_to_its_end(path: Path) -> None:
    assert drive_path(path, M).fsm == path.end


@st.composite
def machines(draw: st.DrawFn) -> MachineDef:
    n = draw(st.integers(min_value=2, max_value=6))
    names = [f"S{i}" for i in range(n)]
    edges = draw(st.sets(st.tuples(st.sampled_from(names[:-1]), st.sampled_from(names)),
                         min_size=1, max_size=12))
    states = (*(StateSpec(s, skill=f"k{s}") for s in names[:-1]),
              StateSpec(names[-1], final=True))
    return MachineDef(name="random", states=states, transitions=tuple(sorted(edges)),
                      initial="S0")


@settings(max_examples=150, deadline=None)
@given(machines())
def test_coverage_of_any_valid_machine_takes_every_transition(machine: MachineDef) -> None:
    assume(not machine.problems())  # unreachable states or traps: not a runnable machine
    paths = transition_coverage(machine)
    assert uncovered(machine, paths) == []
    for p in paths:
        assert p.start == "S0" and p.end in machine.finals
        assert drive_path(p, machine).fsm == p.end
    for p in simple_paths(machine):
        assert len(set(p.states)) == len(p.states) and p.end in machine.finals
