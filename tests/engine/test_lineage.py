"""Lineage on every backend: a fork records its parent and its own time, a rewind keeps
the link, the parent lists its forks, and a what-if fork runs on with another judge; an
old-style fork (a plain copy) reads as having no parent; a fork's record replays."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.lineage import forked_from, forks_of, lineage_json, parents_of
from claimfsm.engine.profile import ProfileError, profile_of
from claimfsm.engine.runtime import Engine
from claimfsm.engine.whatif import what_if_fork
from claimfsm.replay.record import parse_record
from claimfsm.replay.runner import replay_record
from claimfsm.replay.write import engine_record
from claimfsm.skills.context import FixedClock
from claimfsm.state.catalog import SummaryQuery
from tests.support.stance_data import write_dataset

CLAIM = "Water boils at 100 C at sea level."
T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def eng(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    db: str | None = None
    if request.param == "sqlite":
        db = str(tmp_path / "s.db")
    elif request.param == "postgres":
        db = request.getfixturevalue("pg_url")
    clock = FixedClock(T0, tick=timedelta(seconds=1))
    with Engine.open(db, config=EngineConfig(clock=clock)) as opened:
        yield opened


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from claimfsm.eval.data import read_dataset
    from claimfsm.eval.train.judge import train

    root = tmp_path_factory.mktemp("model")
    train(read_dataset(write_dataset(root / "train.jsonl")), root / "m.npz", folds=4)
    return root / "m.npz"


def test_a_fork_records_its_parent_and_its_own_time(eng: Engine) -> None:
    parent = eng.driver.run(eng.start(CLAIM).sid)
    fork = eng.driver.fork(parent.sid, 3)
    assert (fork.rev, fork.parent_rev, fork.fsm) == (4, 3, eng.store.get(parent.sid, 3).fsm)
    assert fork.ts > parent.ts  # its own time, not its parent's
    assert fork.events == [{"type": "Forked", "from": {"sid": parent.sid, "rev": 3},
                            "changes": []}]
    assert forked_from(fork) == {"sid": parent.sid, "rev": 3, "at": fork.ts}
    # The state is the parent's at 3, but for the link.
    copied = eng.store.get(parent.sid, 3).state
    assert fork.state.model_dump(exclude={"sid", "runtime"}) == copied.model_dump(
        exclude={"sid", "runtime"})
    assert eng.store.head(parent.sid) == parent  # untouched
    listed = {s.sid: s for s in eng.store.summaries(SummaryQuery(limit=10)).items}
    assert listed[fork.sid].updated == fork.ts and listed[fork.sid].revisions == 5
    assert eng.store.verify_chain(fork.sid).ok
    # Both ways: the parent lists its fork, the fork names its parent.
    assert forks_of(eng.store, parent.sid) == [{"sid": fork.sid, "rev": 3, "at": fork.ts}]
    assert parents_of(eng.store, [parent.sid, fork.sid]) == {
        parent.sid: None, fork.sid: {"sid": parent.sid, "rev": 3, "at": fork.ts}}
    assert lineage_json(eng.store, parent) == {
        "forked_from": None, "forks": [{"sid": fork.sid, "rev": 3, "at": fork.ts}]}


def test_the_link_survives_steps_and_rewinds_and_a_fork_of_a_fork_names_its_own(
        eng: Engine) -> None:
    parent = eng.driver.run(eng.start(CLAIM).sid)
    fork = eng.driver.fork(parent.sid, 2)
    done = eng.driver.run(fork.sid)
    assert done.fsm == "DONE" and forked_from(done) == forked_from(fork)
    back = eng.driver.rollback(fork.sid, 1)  # to before the fork's own revision
    assert back.events == [{"type": "Rewind", "to": 1}] and forked_from(back) == forked_from(fork)
    grandchild = eng.driver.fork(fork.sid, done.rev)
    assert forked_from(grandchild) == {"sid": fork.sid, "rev": done.rev, "at": grandchild.ts}
    assert [f["sid"] for f in forks_of(eng.store, fork.sid)] == [grandchild.sid]
    assert [f["sid"] for f in forks_of(eng.store, parent.sid)] == [fork.sid]


def test_a_plain_copy_from_before_lineage_reads_as_no_fork(eng: Engine) -> None:
    parent = eng.driver.run(eng.start(CLAIM).sid)
    old = eng.store.fork(parent.sid, 2, "old-style")  # what a fork stored until now
    assert forked_from(old) is None and forks_of(eng.store, parent.sid) == []
    assert lineage_json(eng.store, old) == {"forked_from": None, "forks": []}
    assert eng.driver.run("old-style").fsm == "DONE"


def test_a_what_if_fork_runs_on_with_another_judge(eng: Engine, model_path: Path) -> None:
    parent = eng.driver.run(eng.start(CLAIM).sid)
    verify_at = next(r.rev for r in eng.store.history(parent.sid) if r.fsm == "VERIFY")
    fork = what_if_fork(eng, parent.sid, verify_at, {"stance_model": model_path})
    assert fork.events[0]["changes"] == [
        {"field": "profile.judge", "old": "lexical", "new": "learned"},
        {"field": "profile.stance_model", "old": None, "new": str(model_path)}]
    assert profile_of(fork.state.config).judge == "learned"
    assert fork.state.config["stance_model"] == str(model_path)
    assert profile_of(eng.store.get(parent.sid, verify_at).state.config).judge == "lexical"
    done = eng.driver.run(fork.sid)
    assert done.fsm == "DONE" and done.state.verdict is not None
    assert done.state.judgments != parent.state.judgments  # judged by the learned model
    shown = lineage_json(eng.store, done)["forked_from"]
    assert shown["sid"] == parent.sid and shown["changes"] == fork.events[0]["changes"]
    # And back to the lexical judge: the model file goes with it.
    again = what_if_fork(eng, fork.sid, fork.rev, {"judge": "lexical"})
    assert "stance_model" not in again.state.config
    assert profile_of(again.state.config).judge == "lexical"


def test_a_what_if_fork_that_cannot_run_stores_nothing(eng: Engine, tmp_path: Path) -> None:
    parent = eng.driver.run(eng.start(CLAIM).sid)
    before = list(eng.store.sessions())
    with pytest.raises(ProfileError) as info:
        what_if_fork(eng, parent.sid, 2, {"stance_model": tmp_path / "none.npz"})
    assert info.value.code == "MODEL_NOT_FOUND" and info.value.field == "stance_model"
    with pytest.raises(ProfileError) as bad:
        what_if_fork(eng, parent.sid, 2, {"judge": "learned"})
    assert bad.value.code == "BAD_PROFILE" and bad.value.field == "stance_model"
    assert list(eng.store.sessions()) == before


def test_a_forks_record_replays_to_the_same_hashes(eng: Engine, model_path: Path) -> None:
    parent = eng.driver.run(eng.start(CLAIM).sid)
    plain = eng.driver.run(eng.driver.fork(parent.sid, 2).sid)
    what_if = eng.driver.run(what_if_fork(eng, parent.sid, 2, {"stance_model": model_path}).sid)
    for sid in (plain.sid, what_if.sid):
        record = parse_record(engine_record(eng, sid).to_bytes(), source=sid)
        forks = [e for e in record.entries if getattr(e, "act", None) == "fork"]
        assert len(forks) == 1 and forks[0].rev == 3
        report = replay_record(record, "strict")
        assert report.ok and report.verified, report.divergence
