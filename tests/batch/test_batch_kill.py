"""The kill test: a batch of 400 claims on Ray + PostgreSQL loses three Ray workers
(SIGKILL) and then its own driver mid-run; the same command run again finishes it.
Every claim ends DONE exactly once: one session per claim, revisions contiguous with
no (session, rev) twice, fsck clean, and each session's verdict and revision count
those of a serial run of the same claims (a step done twice would add a revision).
Both runs write the same --out file: the first run's lines survive the second, which
leaves one line per claim.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from claimfsm.batch import BatchClaim, ClaimRunner, read_claims
from claimfsm.engine.runtime import FIXTURES
from claimfsm.state.fsck import fsck

ROOT = Path(__file__).resolve().parents[2]
DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]
N = 400


def _revisions(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM st_revisions").fetchone()
    return int(row[0]) if row else 0


def _workers() -> list[int]:
    """Pids of this test session's Ray workers busy with a batch chunk: descendants of
    this process (never another user's Ray) whose title Ray set to the task's name."""
    parents: dict[int, int] = {}
    titles: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            titles[int(entry.name)] = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    mine, found = {os.getpid()}, []
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                grew = True
    for pid in mine:
        if titles.get(pid, b"").startswith(b"ray::verify_chunk"):
            found.append(pid)
    return found


def _batch(src: Path, url: str, address: str, out: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.Popen(
        [sys.executable, "-c", "from claimfsm.cli import main; main()", "batch", str(src),
         "--db", url, "--ray", address, "--workers", "2", "--out", str(out), "--json"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for(url: str, revisions: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 240
    while _revisions(url) < revisions:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"the batch ended before the kills were done: {err[-3000:]}")
        assert time.monotonic() < deadline, "the batch made no progress"
        time.sleep(0.05)


def test_killed_workers_and_driver_lose_and_double_nothing(
    pg_url: str, ray_address: str, tmp_path: Path
) -> None:
    src = tmp_path / "claims.jsonl"
    src.write_text("".join(json.dumps({"id": f"k{i}", "claim": DEMO[i % len(DEMO)]}) + "\n"
                           for i in range(N)))
    items = read_claims(src)
    serial = ClaimRunner(str(tmp_path / "serial.db"))
    try:
        expected = {item.id: (line["verdict"], line["rev"])
                    for item in items for line in [serial.run(item)]}
    finally:
        serial.close()
    total = sum(rev + 1 for _, rev in expected.values())
    from claimfsm.state.postgres import PostgresStore

    PostgresStore(pg_url).close()  # the tables, so progress can be polled from the start

    results = tmp_path / "results.jsonl"
    first = _batch(src, pg_url, ray_address, results)
    killed = 0
    try:
        for share in (0.1, 0.2, 0.3):
            _wait_for(pg_url, int(total * share), first)
            while not (busy := _workers()):
                assert first.poll() is None
                time.sleep(0.01)
            os.kill(busy[0], signal.SIGKILL)
            killed += 1
        _wait_for(pg_url, int(total * 0.45), first)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert killed == 3
    assert _revisions(pg_url) < total  # the driver really died mid-run
    # Whole lines the killed run wrote (a kill mid-write may leave a last one cut short).
    written = [orjson.loads(line) for line in results.read_bytes().split(b"\n")[:-1]]
    assert written

    second = _batch(src, pg_url, ray_address, results)
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err.decode()[-2000:]
    summary = orjson.loads(out)
    assert summary["claims"] == N and summary["skipped"] > 0
    assert summary["done"] + summary["resumed"] + summary["skipped"] == N
    final = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    got: dict[Any, dict[str, Any]] = {line["id"]: line for line in final}
    assert len(final) == len(got) and set(got) == set(expected)  # one line per claim
    assert all(got[line["id"]] == line for line in written if line["fsm"] == "DONE")
    for item in items:
        line = got[item.id]
        assert line["fsm"] == "DONE" and line["sid"] == BatchClaim(
            id=item.id, claim=item.claim).sid
        assert (line["verdict"], line["rev"]) == expected[item.id], item.id
        if line["status"] != "done":
            assert line["from_rev"] > 0  # resumed or skipped, never restarted

    import psycopg

    with psycopg.connect(pg_url) as conn:
        doubled = conn.execute("SELECT count(*) FROM (SELECT session, rev FROM st_revisions"
                               " GROUP BY session, rev HAVING count(*) > 1) d").fetchone()
        assert doubled == (0,)
    assert _revisions(pg_url) == total  # nothing lost, nothing doubled
    with PostgresStore(pg_url) as store:
        report = fsck(store)
        assert report.ok, report.problems
        assert report.sessions == N and report.revisions == total
        for item in list(items)[:: 37]:
            assert [r.rev for r in store.history(item.sid)] == list(
                range(expected[item.id][1] + 1))
