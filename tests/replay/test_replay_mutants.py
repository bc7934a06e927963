"""Replay's comparison, field by field: every divergence kind with all of its fields, the
closing line, the expected outcome of a record without one, and the run that goes on after
a divergence. Each test kills mutants of fsm/replay/diff.py and fsm/replay/runner.py that
the fixture-based tests let live (`make mutate`, docs/testing.md).

The records are recorded here from a small machine (WORK loops, then CHECK, then DONE);
a divergence comes from replaying them with changed skills, bindings or machine, as a
changed workflow would, not from edited record lines (save the closing line's rev).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from claimfsm.engine.bindings import Binding
from claimfsm.engine.driver import StepResult
from claimfsm.engine.machine import MachineDef, RetryPolicy, StateSpec
from claimfsm.replay import RecordError, replay_record
from claimfsm.replay.diff import ABSENT, first_diff, short
from claimfsm.replay.record import End, Record, Step
from claimfsm.replay.runner import Divergence, Outcome
from claimfsm.replay.write import export_record, header_for, step_from_result, tools_info
from claimfsm.skills.base import Skill
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.errors import StoreError
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision, SessionState
from claimfsm.testing import ScriptedTools, scripted_driver
from claimfsm.testing.scripts import AnyInput

#: What a skill does: its answer from the input's ``st`` and the step's context.
Behaviour = Callable[[dict[str, Any], SkillContext], Envelope]


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


def walk(*, check_final: bool = False, retried: frozenset[str] = frozenset({"FLAKY"})
         ) -> MachineDef:
    """The machine every record here runs; ``check_final``: a changed one in which CHECK
    ends the session."""
    retry = RetryPolicy(codes=retried, max_attempts=3, backoff_s=5.0)
    if check_final:
        return MachineDef(name="walk", states=(
            StateSpec("WORK", skill="work", retry=retry), StateSpec("CHECK", final=True),
            StateSpec("FAILED", final=True)),
            transitions=(("WORK", "WORK"), ("WORK", "CHECK"), ("WORK", "FAILED")),
            initial="WORK", failure="FAILED")
    return MachineDef(name="walk", states=(
        StateSpec("WORK", skill="work", retry=retry), StateSpec("CHECK", skill="check"),
        StateSpec("DONE", final=True), StateSpec("FAILED", final=True)),
        transitions=(("WORK", "WORK"), ("WORK", "CHECK"), ("WORK", "FAILED"),
                     ("CHECK", "WORK"), ("CHECK", "DONE"), ("CHECK", "FAILED")),
        initial="WORK", failure="FAILED")


def binding(name: str, behave: Behaviour, *, extra: dict[str, Any] | None = None,
            label: str | None = None) -> Binding:
    """``d`` merges into memory; ``extra`` joins the input; ``label`` becomes the verdict
    when ``d`` says ``final``."""
    skill = Skill(name=name, input_model=AnyInput, output_model=_Out,
                  handler=lambda inp, ctx: behave(inp.st.model_dump(), ctx),
                  rb_on_error="none", description=name)

    def to_input(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
        return {"memory": dict(state.memory), "st": st, **(extra or {})}

    def apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
        update: dict[str, Any] = {"memory": {**state.memory, **d}}
        if d.get("final"):
            update["verdict"] = {"label": label}
        return state.model_copy(update=update)

    return Binding(skill, to_input, apply)


def loops(times: int, **data: Any) -> Behaviour:
    """WORK: loop until revision ``times``, then move to CHECK."""
    return lambda st, ctx: Envelope.ok(data, rev=st["rev"] + 1,
                                       fsm="WORK" if st["rev"] + 1 < times else "CHECK")


def done(st: dict[str, Any], ctx: SkillContext) -> Envelope:
    return Envelope.ok({"final": True}, rev=st["rev"] + 1, fsm="DONE")


def bindings(work: Behaviour, check: Behaviour = done, **kw: Any) -> dict[str, Binding]:
    return {"work": binding("work", work, **kw), "check": binding("check", check, **kw)}


def record(work: Behaviour, *, check: Behaviour = done, tools: ScriptedTools | None = None,
           steps: int = 20, **kw: Any) -> Record:
    """The record of one session run with these skills (``--record`` writes the same)."""
    lines: list[Step] = []
    head = [0]

    def keep(result: StepResult) -> None:
        lines.append(step_from_result(result, head[0]))
        if result.revision is not None:
            head[0] = result.revision.rev

    driver = scripted_driver(walk(), bindings=bindings(work, check, **kw), tools=tools,
                             on_step=keep)
    first = driver.start("a claim")
    last = driver.run(first.sid, max_steps=steps)
    info = None if tools is None else tools_info(documents=0, facts=0)
    end = End(rev=last.rev, fsm=last.fsm, verdict=(last.state.verdict or {}).get("label")
              ) if last.fsm in ("DONE", "FAILED") else None
    return Record(header=header_for(first, info, "walk"), entries=tuple(lines), end=end,
                  source="walk.jsonl")


def div(step: int, state: str, skill: str | None, kind: str, path: str, expected: Any,
        actual: Any) -> Divergence:
    return Divergence(step=step, line=step + 1, state=state, skill=skill, kind=kind,
                      path=path, expected=expected, actual=actual)


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


def searching(*queries: str) -> Behaviour:
    """WORK: search for each query, then move to CHECK (DONE from there)."""
    def behave(st: dict[str, Any], ctx: SkillContext) -> Envelope:
        assert ctx.tools is not None
        found = [ctx.tools.call("search", {"q": q}).ok for q in queries]
        return Envelope.ok({"found": found}, rev=st["rev"] + 1, fsm="CHECK")
    return behave


def tools() -> ScriptedTools:
    return ScriptedTools({"search": lambda args: {"hits": [args["q"]]}})


def test_a_call_with_other_args_is_unrecorded_naming_the_recorded_one() -> None:
    rec = record(searching("a", "b"), tools=tools())
    report = replay_record(rec, machine=walk(), bindings=bindings(searching("a", "c")))
    assert report.divergence == div(1, "WORK", "work", "UNRECORDED_TOOL_CALL", "calls[1]",
                                    {"tool": "search", "args": {"q": "b"}},
                                    {"tool": "search", "args": {"q": "c"}})


def test_a_call_beyond_the_recorded_ones_is_unrecorded_with_nothing_expected() -> None:
    rec = record(searching("a"), tools=tools())
    report = replay_record(rec, machine=walk(), bindings=bindings(searching("a", "b")))
    assert report.divergence == div(1, "WORK", "work", "UNRECORDED_TOOL_CALL", "calls[1]",
                                    None, {"tool": "search", "args": {"q": "b"}})


def test_a_recorded_call_not_made_is_missing_and_named() -> None:
    rec = record(searching("a", "b"), tools=tools())

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


# -- rewinds, the closing line, a record without one --------------------------------------


def broken_once() -> Behaviour:
    """WORK: fail once (the session ends in FAILED), then move to CHECK."""
    answers = iter([Envelope.error("BROKEN", "broken")])
    return lambda st, ctx: next(answers, None) or Envelope.ok({}, rev=st["rev"] + 1,
                                                                fsm="CHECK")


def rewound() -> Record:
    """A session that failed, was rewound with reopen, and then finished."""
    live = bindings(broken_once())
    driver = scripted_driver(walk(), bindings=live)
    sid = driver.start("a claim").sid
    assert driver.run(sid).fsm == "FAILED"
    driver.rollback(sid, 0, reopen=True)
    assert driver.run(sid).fsm == "DONE"
    return export_record(driver.store, sid, tools=None, bindings=live, machine="walk",
                         finals=walk().finals)


def test_a_rewind_that_reopens_a_failed_session_replays_clean() -> None:
    rec = rewound()
    assert [type(e).__name__ for e in rec.entries] == ["Step", "Rewind", "Step", "Step"]
    report = replay_record(rec, machine=walk(), bindings=bindings(broken_once()))
    assert report.ok and report.actual == Outcome(fsm="DONE", rev=4, verdict=None, steps=3)


class RefusingRewinds(MemoryStore):
    """A store that refuses to commit a rewind (as a full or read-only one would)."""

    def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        if revision.skill == "rewind":
            raise StoreError("no room for the rewind")
        return super().commit(revision, expected_rev=expected_rev)


def test_a_rewind_the_store_refuses_is_a_commit_mismatch_at_its_line() -> None:
    report = replay_record(rewound(), machine=walk(), bindings=bindings(broken_once()),
                           store=RefusingRewinds())
    assert report.divergence == div(2, "FAILED", None, "COMMIT_MISMATCH", "to", 0,
                                    "STORE_ERROR")
    assert report.steps == 1 and report.actual.fsm == "FAILED"


def test_a_changed_verdict_is_an_end_mismatch_after_the_last_line() -> None:
    rec = record(loops(2), label="SUPPORTS")
    report = replay_record(rec, machine=walk(), bindings=bindings(loops(2), label="REFUTES"))
    n = len(rec.entries) + 1
    assert report.divergence == div(n, "DONE", None, "END_MISMATCH", "end.verdict",
                                    "SUPPORTS", "REFUTES")
    assert report.verdict_changed


def test_a_closing_line_with_another_revision_is_an_end_mismatch() -> None:
    rec = record(loops(2))
    assert rec.end is not None
    lying = Record(header=rec.header, entries=rec.entries,
                   end=rec.end.model_copy(update={"rev": rec.end.rev + 1}))
    report = replay_record(lying, machine=walk(), bindings=bindings(loops(2)))
    assert report.divergence == div(len(rec.entries) + 1, "DONE", None, "END_MISMATCH",
                                    "end.rev", rec.end.rev + 1, rec.end.rev)


def test_a_verdict_that_is_not_text_is_no_verdict() -> None:
    rec = record(loops(2))
    report = replay_record(rec, machine=walk(), bindings=bindings(loops(2), label=7))  # type: ignore[arg-type]
    assert report.actual.verdict is None


def test_an_unfinished_record_expects_where_its_last_committed_step_left() -> None:
    rec = record(loops(9), steps=4)
    assert rec.end is None
    report = replay_record(rec, machine=walk(), bindings=bindings(loops(9)))
    assert report.ok and report.expected == Outcome(fsm="WORK", rev=4, verdict=None, steps=4)
    assert report.actual == Outcome(fsm="WORK", rev=4, verdict=None, steps=4)


def test_an_unfinished_record_of_uncommitted_steps_expects_the_initial_state() -> None:
    illegal: Behaviour = lambda st, ctx: Envelope.ok({}, rev=st["rev"] + 1, fsm="DONE")  # noqa: E731
    rec = record(illegal, steps=1)
    assert not rec.steps[0].committed and rec.end is None
    report = replay_record(rec, machine=walk(), bindings=bindings(illegal))
    assert report.ok and report.expected == Outcome(fsm="WORK", rev=0, verdict=None, steps=1)


def test_an_unfinished_record_ending_in_a_rewind_expects_the_rewound_state() -> None:
    live = bindings(loops(1), check=lambda st, ctx: Envelope.ok({}, rev=st["rev"] + 1,
                                                                  fsm="WORK"))
    driver = scripted_driver(walk(), bindings=live)
    sid = driver.start("a claim").sid
    for _ in range(3):  # WORK -> CHECK -> WORK -> CHECK
        driver.step(sid)
    driver.rollback(sid, 1)
    driver.rollback(sid, 0)
    rec = export_record(driver.store, sid, tools=None, bindings=live, machine="walk",
                        finals=walk().finals)
    report = replay_record(rec, machine=walk(), bindings=live)
    assert report.ok and report.expected == Outcome(fsm="WORK", rev=5, verdict=None, steps=3)
    to_check = Record(header=rec.header, entries=rec.entries[:-1])
    report = replay_record(to_check, machine=walk(), bindings=live)
    assert report.ok and report.expected == Outcome(fsm="CHECK", rev=4, verdict=None, steps=3)


# -- after a divergence: on to the end ------------------------------------------------------


def by_rev(answers: dict[int, Envelope | str]) -> Behaviour:
    """WORK: the answer for each head revision (a state name: ok, moving there)."""
    def behave(st: dict[str, Any], ctx: SkillContext) -> Envelope:
        answer = answers[st["rev"]]
        if isinstance(answer, Envelope):
            return answer
        return Envelope.ok({"at": st["rev"]}, rev=st["rev"] + 1, fsm=answer)
    return behave


def test_a_diverged_replay_waits_out_its_retries_and_runs_to_the_end() -> None:
    rec = record(loops(2))  # WORK, WORK, CHECK, DONE: three lines
    work = by_rev({0: "WORK", 1: Envelope.retry("FLAKY", "later"), 2: "CHECK"})
    report = replay_record(rec, machine=walk(), bindings=bindings(work))
    assert report.divergence is not None and report.divergence.step == 1
    # The third line meets the retry not yet due (the record's clock); the rest runs
    # after the record, each retry's time reached by moving the clock.
    assert report.actual == Outcome(fsm="DONE", rev=4, verdict=None, steps=5)


def test_a_diverged_replay_stops_at_a_step_that_commits_nothing() -> None:
    rec = record(loops(2))
    work = by_rev({0: "WORK", 1: "WORK", 2: "WORK", 3: "DONE"})  # WORK -> DONE is illegal
    report = replay_record(rec, machine=walk(), bindings=bindings(work))
    assert report.divergence is not None and report.divergence.step == 1
    assert report.actual == Outcome(fsm="WORK", rev=3, verdict=None, steps=4)


def test_after_a_divergence_recorded_calls_answer_in_any_order() -> None:
    def first(st: dict[str, Any], ctx: SkillContext) -> Envelope:
        if st["rev"] == 0:
            return Envelope.ok({}, rev=1, fsm="WORK")
        return searching("a", "b")(st, ctx)

    rec = record(first, tools=tools())

    def changed(st: dict[str, Any], ctx: SkillContext) -> Envelope:
        if st["rev"] == 0:
            return Envelope.ok({"changed": True}, rev=1, fsm="WORK")
        env = searching("b", "a")(st, ctx)
        ok = env.d is not None and all(env.d["found"])
        return env if ok else Envelope.error("NOT_FOUND", "a search failed")

    report = replay_record(rec, machine=walk(), bindings=bindings(changed))
    assert report.divergence is not None and report.divergence.step == 1
    assert report.actual == Outcome(fsm="DONE", rev=3, verdict=None, steps=3)
