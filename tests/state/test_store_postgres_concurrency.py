"""Eight processes on one PostgreSQL database: four race on one session (every revision
committed exactly once, the losers see RevConflict), four write their own sessions; all
of them share blobs. Then fsck is clean and a second store opened on the same URL reads
what the first wrote.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from claimfsm.state.fsck import fsck
from claimfsm.state.model import SessionState
from tests.support.pg_worker import revision

ROOT = Path(__file__).resolve().parents[2]
LAST = 200
RACERS = 4
OWNERS = 4


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.pg_worker", *args], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_eight_processes_share_one_database(pg_url: str, tmp_path: Path) -> None:
    from claimfsm.state.postgres import PostgresStore

    go = str(tmp_path / "go")
    with PostgresStore(pg_url) as store:
        store.create(revision("race", 0, SessionState(sid="race", claim="r", fsm="X")))
    racers = [_spawn("race", pg_url, "race", str(LAST), f"w{i}", go) for i in range(RACERS)]
    owners = [_spawn("own", pg_url, f"own{i}", str(LAST), go) for i in range(OWNERS)]
    for proc in racers + owners:  # start together: a head start would serialise the race
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    Path(go).touch()
    wins: dict[int, list[str]] = {}
    conflicts = 0
    for i, proc in enumerate(racers):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        for line in out.split("\n"):
            if line.startswith("W "):
                wins.setdefault(int(line[2:]), []).append(f"w{i}")
            elif line.startswith("C "):
                conflicts += 1
    for proc in owners:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert out.strip() == "done"
    assert sorted(wins) == list(range(1, LAST + 1))
    assert all(len(writers) == 1 for writers in wins.values())
    assert conflicts > 0  # the racers really raced
    with PostgresStore(pg_url) as store:
        report = fsck(store)
        assert report.ok, report.problems
        assert report.sessions == 1 + OWNERS
        assert report.revisions == (1 + OWNERS) * (LAST + 1)
        history = store.history("race")
        assert [r.rev for r in history] == list(range(LAST + 1))
        for rev, (writer,) in wins.items():
            assert history[rev].state.memory == {"writer": writer}
        assert history[LAST].state.pages[f"p{LAST}"]["text"].endswith(str(LAST))
        for i in range(OWNERS):
            assert store.head(f"own{i}").state.rounds == LAST
        # Per distinct page: its entry and its text, once, however many writers stored it.
        assert store.stats()["blobs"] == 2 * (LAST // 4)
        assert store.compact().blobs_dropped == 0
