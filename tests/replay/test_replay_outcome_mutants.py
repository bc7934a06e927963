"""Replay's outcome: rewinds replayed (and refused), the closing line checked, the
outcome expected from a record without one, and the run that goes on after a divergence.
Each test kills mutants of fsm/replay/runner.py that the fixture-based tests let live
(`make mutate`, docs/testing.md). The records come from tests/support/walk.py.
"""

from __future__ import annotations

from typing import Any

from claimfsm.replay import replay_record
from claimfsm.replay.record import Record
from claimfsm.replay.runner import Outcome
from claimfsm.replay.write import export_record
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.errors import StoreError
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision
from claimfsm.testing import scripted_driver
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

    rec = record(first, tools=search_tools())

    def changed(st: dict[str, Any], ctx: SkillContext) -> Envelope:
        if st["rev"] == 0:
            return Envelope.ok({"changed": True}, rev=1, fsm="WORK")
        env = searching("b", "a")(st, ctx)
        ok = env.d is not None and all(env.d["found"])
        return env if ok else Envelope.error("NOT_FOUND", "a search failed")

    report = replay_record(rec, machine=walk(), bindings=bindings(changed))
    assert report.divergence is not None and report.divergence.step == 1
    assert report.actual == Outcome(fsm="DONE", rev=3, verdict=None, steps=3)
