"""Replay's comparison, field by field: the diff, the records that do not fit, and every
divergence kind with all of its fields. Each test kills mutants of fsm/replay/diff.py and
fsm/replay/runner.py and compare.py that the fixture-based tests let live (`make mutate`,
docs/testing.md).

The records are recorded from a small machine (tests/support/walk.py: WORK loops, then
CHECK, then DONE); a divergence comes from replaying them with changed skills, bindings
or machine, as a changed workflow would, not from edited record lines.
"""

from __future__ import annotations

from typing import Any

import pytest

from claimfsm.engine.machine import MachineDef
from claimfsm.replay import RecordError, replay_record
from claimfsm.replay.diff import ABSENT, first_diff, short
from claimfsm.replay.record import Record
from claimfsm.replay.runner import Outcome
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from tests.support.walk import (
    Behaviour,
    bindings,
    div,
    loops,
    record,
    search_tools,
    searching,
    walk,
)

# -- the diff ----------------------------------------------------------------------------


@pytest.mark.parametrize(("expected", "actual", "found"), [
    ({"a": {"x": 1}}, {"a": {"x": 1, "y": 2}}, ("a.y", ABSENT, 2)),
    ({"a": [1]}, {"a": [1, 2]}, ("a[1]", ABSENT, 2)),
    ([1, [2, 3]], [1, [2]], ("[1][1]", 3, ABSENT)),
    ({"a": [{"b": None}]}, {"a": [{"b": 0}]}, ("a[0].b", None, 0)),
    ("x", "x", None),
])
def test_first_diff_names_nested_paths_and_missing_sides(expected: Any, actual: Any,
                                                          found: Any) -> None:
    assert first_diff(expected, actual) == found


def test_short_keeps_short_values_and_cuts_long_ones_to_the_width() -> None:
    assert short("plain text") == "plain text"
    assert short({"a": [1, None]}) == '{"a":[1,null]}'
    assert short("x" * 160) == "x" * 160
    assert short("x" * 161) == "x" * 157 + "..."
    assert short("abcdefgh", width=5) == "ab..." and short([1, 2, 3], width=7) == "[1,2,3]"


# -- records that do not fit ------------------------------------------------------------


def test_a_record_without_steps_is_refused_at_its_second_line() -> None:
    empty = Record(header=record(loops(2)).header, entries=(), source="r.jsonl")
    with pytest.raises(RecordError) as info:
        replay_record(empty, machine=walk())
    assert (info.value.line, info.value.source) == (2, "r.jsonl")
    assert info.value.msg == "r.jsonl line 2: the record has no steps: nothing to replay"


def test_a_record_of_another_machine_is_refused_at_its_header() -> None:
    other = MachineDef(name="other", states=walk().states, transitions=walk().transitions,
                       initial="WORK", failure="FAILED")
    with pytest.raises(RecordError) as info:
        replay_record(record(loops(2)), machine=other, bindings=bindings(loops(2)))
    assert (info.value.line, info.value.source) == (1, "walk.jsonl")
    assert info.value.msg == ("walk.jsonl line 1: machine: the record is of 'walk', this "
                              "replay runs 'other'")


def test_a_final_step_without_the_end_line_names_the_missing_line() -> None:
    full = record(loops(2))
    cut = Record(header=full.header, entries=full.entries, source="r.jsonl")
    with pytest.raises(RecordError) as info:
        replay_record(cut, machine=walk(), bindings=bindings(loops(2)))
    assert (info.value.line, info.value.source) == (len(full.entries) + 2, "r.jsonl")
    assert info.value.msg.endswith("truncated: the last step reaches final state DONE but "
                                   "the end line is missing")


# -- each divergence kind, every field ---------------------------------------------------


def test_a_changed_input_is_an_input_mismatch_at_its_path() -> None:
    report = replay_record(record(loops(3)), machine=walk(),
                           bindings=bindings(loops(3), extra={"extra": 1}))
    assert report.divergence == div(1, "WORK", "work", "INPUT_MISMATCH", "input.extra",
                                    ABSENT, 1)


def test_inputs_equal_as_values_but_not_as_bytes_diverge_at_the_root() -> None:
    # 0.0 == -0.0, so no field differs, but the serialised input does.
    rec = record(loops(3), extra={"z": 0.0})
    report = replay_record(rec, machine=walk(), bindings=bindings(loops(3), extra={"z": -0.0}))
    first = rec.steps[0]
    assert report.divergence == div(1, "WORK", "work", "INPUT_MISMATCH", "input",
                                    first.input, {**first.input, "z": -0.0})


def test_envelopes_equal_as_values_but_not_as_bytes_diverge_at_the_root() -> None:
    rec = record(loops(3, z=0.0))
    report = replay_record(rec, machine=walk(), bindings=bindings(loops(3, z=-0.0)))
    actual = {**rec.steps[0].envelope, "d": {**rec.steps[0].envelope["d"], "z": -0.0}}
    assert report.divergence == div(1, "WORK", "work", "ENVELOPE_MISMATCH", "(root)",
                                    rec.steps[0].envelope, actual)


def test_a_call_with_other_args_is_unrecorded_naming_the_recorded_one() -> None:
    rec = record(searching("a", "b"), tools=search_tools())
    report = replay_record(rec, machine=walk(), bindings=bindings(searching("a", "c")))
    assert report.divergence == div(1, "WORK", "work", "UNRECORDED_TOOL_CALL", "calls[1]",
                                    {"tool": "search", "args": {"q": "b"}},
                                    {"tool": "search", "args": {"q": "c"}})


def test_a_call_beyond_the_recorded_ones_is_unrecorded_with_nothing_expected() -> None:
    rec = record(searching("a"), tools=search_tools())
    report = replay_record(rec, machine=walk(), bindings=bindings(searching("a", "b")))
    assert report.divergence == div(1, "WORK", "work", "UNRECORDED_TOOL_CALL", "calls[1]",
                                    None, {"tool": "search", "args": {"q": "b"}})


def test_a_recorded_call_not_made_is_missing_and_named() -> None:
    rec = record(searching("a", "b"), tools=search_tools())

    def fewer(st: dict[str, Any], ctx: SkillContext) -> Envelope:  # the same answer
        assert ctx.tools is not None
        ctx.tools.call("search", {"q": "a"})
        return Envelope.ok({"found": [True, True]}, rev=st["rev"] + 1, fsm="CHECK")

    report = replay_record(rec, machine=walk(), bindings=bindings(fewer))
    assert report.divergence == div(1, "WORK", "work", "MISSING_TOOL_CALL", "calls[1]",
                                    {"tool": "search", "args": {"q": "b"}}, None)
    assert replay_record(rec, "tools", machine=walk(), bindings=bindings(fewer)).ok


def test_the_same_envelope_with_another_next_state_is_a_commit_mismatch() -> None:
    flaky: Behaviour = lambda st, ctx: Envelope.error("FLAKY", "flaky")  # noqa: E731
    rec = record(flaky, steps=1)  # FLAKY is retried: the step stays in WORK
    assert rec.steps[0].after == "WORK"
    report = replay_record(rec, machine=walk(retried=frozenset()), bindings=bindings(flaky))
    assert report.divergence == div(1, "WORK", "work", "COMMIT_MISMATCH", "after",
                                    "WORK (committed=True)", "FAILED (committed=True)")


def test_a_session_that_ends_before_the_record_does_is_session_ended() -> None:
    rec = record(loops(2))  # WORK, WORK, CHECK, DONE
    report = replay_record(rec, machine=walk(check_final=True), bindings=bindings(loops(2)))
    assert report.divergence == div(3, "CHECK", "check", "SESSION_ENDED", "before",
                                    "CHECK", "CHECK")
    assert report.actual == Outcome(fsm="CHECK", rev=2, verdict=None, steps=2)
