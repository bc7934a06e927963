"""``Driver.run`` and the refusals before any step: a lost compare-and-set retried once
from a fresh head, the waits for retries within the session's deadline, and the errors
for a finished session, a session of another machine and an unbound skill. Each test
kills mutants of fsm/engine/driver.py that the other driver tests let live
(`make mutate`, docs/testing.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from claimfsm.engine.bindings import memory_binding
from claimfsm.engine.driver import Driver, StepResult
from claimfsm.engine.errors import MachineMismatch, SessionFinished, UnknownSkill
from claimfsm.state.errors import RevConflict
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import RetryState, Revision
from claimfsm.testing import goto, retry, scripted_skill
from tests.support.walk import driver, refused, walk


class Racing(MemoryStore):
    """A store another writer beats to every commit after the first ``wins``."""

    def __init__(self, wins: int) -> None:
        super().__init__()
        self.wins, self.tries = wins, 0

    def commit(self, revision: Revision, *, expected_rev: int) -> Revision:
        self.tries += 1
        if self.tries > self.wins:
            raise RevConflict(f"head is {expected_rev + 1}, not {expected_rev}",
                              sid=revision.sid)
        return super().commit(revision, expected_rev=expected_rev)


def test_a_lost_compare_and_set_is_a_rev_conflict_marked_lost() -> None:
    seen: list[StepResult] = []
    d = driver(goto("WORK"), store=Racing(0), seen=seen)
    d.start("a claim")
    result = d.step("S1")
    refused(result, "work", "REV_CONFLICT", "head is 1, not 0")
    assert result.lost_race and seen == [result]


@pytest.mark.parametrize(("wins", "tries"), [(0, 1), (2, 4)])
def test_run_retries_a_lost_race_once_from_a_fresh_head(wins: int, tries: int) -> None:
    store = Racing(wins)
    d = driver(goto("WORK"), store=store)
    d.start("a claim")
    head = d.run("S1")
    # The first head is fresh: a lost race there ends the run. After a commit, one more
    # try from the head read again, then the run ends.
    assert store.tries == tries and head == store.head("S1") and head.rev == wins


def test_run_returns_the_head_after_a_step_that_commits_nothing() -> None:
    seen: list[StepResult] = []
    d = driver([goto("WORK"), goto("DONE"), goto("CHECK")], seen=seen)
    d.start("a claim")
    head = d.run("S1")  # WORK -> DONE is illegal: one refused step, then the run ends
    assert head == d.store.head("S1") and head.rev == 1
    assert [r.committed for r in seen] == [True, False]


def test_run_stops_after_a_thousand_steps_by_default() -> None:
    d = driver(goto("WORK"))
    d.start("a claim")
    assert d.run("S1").rev == 1000


# -- waiting for retries ------------------------------------------------------------------------


@pytest.mark.parametrize(("deadline", "waits"), [(None, [2.0]), (60, [2.0]), (1.5, [1.5]),
                                                 (0.5, [0.5])])
def test_run_sleeps_until_the_retry_but_never_past_the_deadline(
        deadline: float | None, waits: list[float]) -> None:
    sleeps: list[float] = []
    d = driver([retry("FLAKY"), goto("CHECK")], sleeps=sleeps)
    d.start("a claim", config={} if deadline is None else {"deadline_s": deadline})
    d.run("S1")
    assert sleeps == waits


def test_run_does_not_sleep_once_the_deadline_has_passed() -> None:
    sleeps: list[float] = []
    d = driver([retry("FLAKY"), goto("CHECK")], sleeps=sleeps)
    d.start("a claim", config={"deadline_s": 1})
    d.step("S1")
    d.clock.advance(timedelta(seconds=1.5))  # type: ignore[attr-defined]
    assert d.run("S1").state.error == {
        "code": "DEADLINE_EXCEEDED", "msg": "session deadline 2026-01-01T00:00:01+00:00 "
        "passed at 2026-01-01T00:00:01.500000+00:00 (config.deadline_s = 1)"}
    assert sleeps == []


def test_a_short_retry_is_waited_for_within_the_deadline() -> None:
    sleeps: list[float] = []
    d = driver([retry("FLAKY"), goto("CHECK")], machine=walk(backoff=0.5), sleeps=sleeps)
    d.start("a claim", config={"deadline_s": 0.25})
    d.run("S1")
    assert sleeps == [0.25]


@pytest.mark.parametrize("pending", [
    RetryState(state="CHECK", attempts=1, next_at="2026-01-01T01:00:00+00:00"),
    RetryState(state="WORK", attempts=1, next_at=None),
])
def test_a_retry_of_another_state_or_without_a_time_does_not_hold_a_step(
        pending: RetryState) -> None:
    sleeps: list[float] = []
    d = driver(goto("CHECK"), sleeps=sleeps)
    first = d.start("a claim")
    state = first.state.model_copy(update={"retry": pending})
    d.store.commit(first.model_copy(update={"rev": 1, "parent_rev": 0, "state": state}),
                   expected_rev=0)
    assert d.step("S1").committed
    d.store.commit(d.store.head("S1").model_copy(update={
        "rev": 3, "parent_rev": 2, "fsm": "WORK", "state": state}), expected_rev=2)
    assert d.run("S1").fsm == "DONE" and sleeps == []


# -- refusals before any step -------------------------------------------------------------------


def test_stepping_a_finished_session_names_it_and_its_state() -> None:
    d = driver(goto("CHECK"))
    d.start("a claim")
    d.run("S1")
    with pytest.raises(SessionFinished) as info:
        d.step("S1")
    assert (info.value.sid, info.value.msg) == ("S1", "session S1 is in final state DONE")


def test_a_session_of_another_machine_names_its_state() -> None:
    d = driver(goto("CHECK"))
    first = d.start("a claim")
    state = first.state.model_copy(update={"fsm": "ELSEWHERE"})
    d.store.commit(first.model_copy(update={"rev": 1, "parent_rev": 0, "fsm": "ELSEWHERE",
                                            "state": state}), expected_rev=0)
    with pytest.raises(MachineMismatch) as info:
        d.step("S1")
    assert info.value.sid == "S1" and info.value.msg == (
        "session S1 is in state ELSEWHERE, which machine 'walk' does not have (was it "
        "started by another machine? drive it with that one)")


def test_a_machine_binding_an_unknown_skill_is_refused_naming_it() -> None:
    with pytest.raises(UnknownSkill) as info:
        Driver(MemoryStore(), machine=walk(), bindings={
            "work": memory_binding(scripted_skill("work", goto("CHECK")))})
    assert info.value.msg == "state CHECK binds unknown skill 'check'"


def test_default_session_ids_are_twelve_hex_digits() -> None:
    ids = {Driver(MemoryStore(), machine=walk(), bindings=driver([]).bindings).new_sid()
           for _ in range(20)}
    assert len(ids) == 20 and all(len(i) == 12 and int(i, 16) >= 0 for i in ids)
