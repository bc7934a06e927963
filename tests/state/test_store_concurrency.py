"""Several processes on one SQLite file: writers on their own sessions never see
"database is locked"; writers racing on one session commit every revision exactly once
and the losers see RevConflict.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from claimfsm.state.fsck import fsck
from claimfsm.state.model import SessionState
from claimfsm.state.sqlite import SQLiteStore
from tests.support.store_worker import revision

ROOT = Path(__file__).resolve().parents[2]

LAST = 3000 if os.environ.get("CLAIMFSM_STRESS") == "1" else 300
RACERS = 3
OWNERS = 4
MODES = ("normal", "full", "group")


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.store_worker", *args], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_processes_share_one_file(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    go = str(tmp_path / "go")
    with SQLiteStore(db) as store:
        store.create(revision("race", 0, SessionState(sid="race", claim="r", fsm="X")))
    racers = [_spawn("race", db, "race", MODES[i % 3], str(LAST), f"w{i}", go)
              for i in range(RACERS)]
    owners = [_spawn("own", db, f"own{i}", MODES[i % 3], str(LAST), go) for i in range(OWNERS)]
    for proc in racers + owners:  # start together: a head start would serialise the race
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    Path(go).touch()
    wins: dict[int, list[str]] = {}
    conflicts = 0
    for i, proc in enumerate(racers):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "locked" not in err
        for line in out.split("\n"):
            if line.startswith("W "):
                wins.setdefault(int(line[2:]), []).append(f"w{i}")
            elif line.startswith("C "):
                conflicts += 1
    for proc in owners:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    assert sorted(wins) == list(range(1, LAST + 1))
    assert all(len(writers) == 1 for writers in wins.values())
    assert conflicts > 0  # the racers really raced
    with SQLiteStore(db) as store:
        report = fsck(store)
        assert report.ok, report.problems
        assert report.sessions == 1 + OWNERS
        assert report.revisions == (1 + OWNERS) * (LAST + 1)
        history = store.history("race")
        assert [r.rev for r in history] == list(range(LAST + 1))
        for rev, (writer,) in wins.items():
            assert history[rev].state.memory == {"writer": writer}
        for i in range(OWNERS):
            assert store.head(f"own{i}").state.rounds == LAST
    print(f"\n{RACERS + OWNERS} processes, {report.revisions} revisions, {conflicts} "
          "REV_CONFLICTs, none lost or doubled, fsck clean")
