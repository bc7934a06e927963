"""fsck agrees with every sid the store accepts: a sid long enough to be stored as a blob
reference (256 bytes and more) is not reported as SID_MISMATCH."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.skills.context import FixedClock
from claimfsm.state.fsck import fsck
from claimfsm.state.sqlite import SQLiteStore


@pytest.mark.parametrize("length", [255, 256, 300, 1000])
def test_fsck_is_clean_for_long_sids(length: int, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    sid = "s" * length
    with Engine.open(db, config=EngineConfig(clock=FixedClock())) as eng:
        eng.driver.run(eng.driver.start("Water boils at 100 degrees.", sid=sid).sid)
        forked = eng.driver.fork(sid, 2, new_sid="f" * length)
        eng.driver.run(forked.sid)
    with SQLiteStore(db) as store:
        report = fsck(store)
        assert report.ok and report.sessions == 2, report
        store.compact()
        assert fsck(store).ok
