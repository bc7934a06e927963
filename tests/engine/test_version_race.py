"""A migration runs exactly once under racing workers: processes running version 2 over
the same version 1 sessions, on one SQLite file and on one PostgreSQL database. Each
session gets one ``Migrated`` revision (compare-and-set on the head: the losers see the
crossed head and go on), ends DONE, fsck is clean and the migrated sessions replay.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from claimfsm.engine.version import Versioning
from claimfsm.replay import replay_record
from claimfsm.replay.write import export_record
from claimfsm.skills.context import FixedClock
from claimfsm.state.fsck import fsck
from claimfsm.state.open import open_store
from tests.support.versions import V1, V2

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 12
RACERS = 4


def _race(db: str, tmp_path: Path) -> None:
    sids = [f"s{i}" for i in range(SESSIONS)]
    with open_store(db) as store:
        d1 = V1.driver(store, clock=FixedClock())
        for sid in sids:
            d1.start("claim", sid=sid)
            d1.step(sid)  # waits in B, which version 2 migrates to C
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.support.versions", db, f"w{i}",
                               str(go), *sids], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(RACERS)]
    for proc in procs:  # start together: a head start would serialise the race
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    go.touch()
    migrations: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        migrations += [line[2:] for line in out.splitlines() if line.startswith("M ")]
    assert sorted(migrations) == sorted(sids)  # each crossed once, by one worker
    with open_store(db) as store:
        for sid in sids:
            hist = store.history(sid)
            crossed = [r for r in hist if any(e["type"] == "Migrated" for e in r.events)]
            assert len(crossed) == 1 and hist[-1].fsm == "DONE", sid
            record = export_record(store, sid, tools=None, bindings=V2.bindings,
                                   machine="versioned", finals=V2.definition.finals)
            report = replay_record(record, "strict", machine=V2.definition,
                                   bindings=V2.bindings,
                                   versioning=Versioning(V2.version, V2.migrations),
                                   registered=[(V1.definition, V1.bindings)])
            assert report.ok, (sid, report.divergence)
        assert fsck(store).ok


def test_a_migration_runs_once_among_racing_workers_on_sqlite(tmp_path: Path) -> None:
    _race(str(tmp_path / "race.db"), tmp_path)


def test_a_migration_runs_once_among_racing_workers_on_postgres(pg_url: str,
                                                                 tmp_path: Path) -> None:
    _race(pg_url, tmp_path)
