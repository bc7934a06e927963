"""``claimfsm batch``: input checks, results and summary, resume (DONE skipped, mid-way
continued from its head), reload on a compare-and-set miss, and Ray on SQLite and
PostgreSQL giving the verdicts of an in-process run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.batch import BatchClaim, ClaimRunner, read_claims, run_batch, session_id
from claimfsm.cli.main import main
from claimfsm.engine.runtime import FIXTURES
from claimfsm.state.fsck import fsck
from claimfsm.state.open import open_store

DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def claims_file(tmp_path: Path, n: int, name: str = "claims.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"id": f"c{i}" if i % 2 else i,
                                        "claim": DEMO[i % len(DEMO)]}) + "\n"
                            for i in range(n)))
    return path


def reference(n: int) -> dict[Any, tuple[str | None, int]]:
    """Verdict and final revision of each claim, one session at a time in memory."""
    runner = ClaimRunner(None)
    try:
        items = [BatchClaim(id=f"c{i}" if i % 2 else i, claim=DEMO[i % len(DEMO)])
                 for i in range(n)]
        return {item.id: (line["verdict"], line["rev"])
                for item in items for line in [runner.run(item)]}
    finally:
        runner.close()


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_bad_input_is_refused_by_line_before_anything_runs(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "claim": "Paris is in France."}\nnot json\n{"id": 2}\n'
                   '{"id": 1, "claim": "again"}\n{"id": 3, "claim": "", "x": 1}\n')
    res = run("batch", str(bad), "--db", str(db), "--workers", "0", "--json")
    assert res.exit_code == 2
    error = orjson.loads(res.output)["error"]
    assert error["code"] == "BAD_CLAIMS"
    for part in ("line 2: not valid JSON", "line 3: field 'claim' is missing",
                 "line 4: id 1 already used on line 1", "line 5: unknown field 'x'"):
        assert part in error["msg"]
    from claimfsm.skills.limits import MAX_CLAIM_CHARS

    huge = tmp_path / "huge.jsonl"
    huge.write_text(json.dumps({"id": "h", "claim": "x" * (MAX_CLAIM_CHARS + 1)}) + "\n")
    res = run("batch", str(huge), "--db", str(db), "--workers", "0", "--json")
    assert res.exit_code == 2
    assert "line 1: INPUT_TOO_LARGE: claim:" in orjson.loads(res.stdout)["error"]["msg"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    res = run("batch", str(empty), "--db", str(db), "--workers", "0")
    assert res.exit_code == 2 and "no claims" in res.output
    res = run("batch", str(tmp_path / "nope.jsonl"), "--db", str(db), "--workers", "0")
    assert res.exit_code == 2 and "BAD_CLAIMS" in res.output
    res = run("batch", str(bad), "--db", str(db), "--workers", "0", "--ray", "auto")
    assert res.exit_code == 2 and "BAD_OPTION" in res.output
    assert not db.exists()


def test_session_ids_follow_the_line() -> None:
    assert session_id("a", "x") == session_id("a", "x") == BatchClaim(id="a", claim="x").sid
    assert len({session_id("a", "x"), session_id("a", "y"), session_id("b", "x"),
                session_id(1, "x"), session_id("1", "x")}) == 5


def test_in_process_batch_streams_results_and_a_rerun_skips(tmp_path: Path) -> None:
    n = 24
    src, db, out = claims_file(tmp_path, n), str(tmp_path / "b.db"), tmp_path / "r.jsonl"
    res = run("batch", str(src), "--db", db, "--workers", "0", "--out", str(out), "--json")
    assert res.exit_code == 0, res.output
    summary = orjson.loads(res.output)
    assert summary["claims"] == n and summary["done"] == n and summary["runner"] == "in-process"
    got = lines(out)
    assert [g["id"] for g in got] == [c.id for c in read_claims(src)]  # ids kept, as given
    assert {g["id"]: (g["verdict"], g["rev"]) for g in got} == reference(n)
    assert all(g["fsm"] == "DONE" and g["status"] == "done" and g["from_rev"] == 0
               for g in got)
    assert sum(summary["verdicts"].values()) == n
    with open_store(db) as store:
        before = fsck(store)
    res = run("batch", str(src), "--db", db, "--workers", "0", "--out", str(out))
    assert res.exit_code == 0 and f"skipped {n}" in res.output
    # The re-run has nothing new to say: --out is as the first run left it.
    assert lines(out) == got
    with open_store(db) as store:
        after = fsck(store)
    assert after.ok and after.revisions == before.revisions and after.sessions == n


def test_a_half_done_session_resumes_from_its_head(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    item = BatchClaim(id="moon", claim=DEMO[0])
    runner = ClaimRunner(db)
    try:
        driver = runner.engine.driver
        driver.start(item.claim, sid=item.sid, config=runner.engine.profile.config())
        driver.step(item.sid)
        driver.step(item.sid)
        early = [r.model_dump() for r in runner.engine.store.history(item.sid)]
        line = runner.run(item)
        assert line["status"] == "resumed" and line["from_rev"] == 2 and line["fsm"] == "DONE"
        history = runner.engine.store.history(item.sid)
        assert [r.model_dump() for r in history[:3]] == early  # never restarted
        assert (line["verdict"], line["rev"]) == reference(1)[0]
        assert runner.engine.store.verify_chain(item.sid).ok
    finally:
        runner.close()


def test_a_lost_compare_and_set_reloads_instead_of_failing(tmp_path: Path) -> None:
    db = str(tmp_path / "cas.db")
    item = BatchClaim(id=0, claim=DEMO[0])
    mine, other = ClaimRunner(db), ClaimRunner(db)
    try:
        store = mine.engine.store
        real_commit = store.commit
        raced: list[int] = []

        def commit(revision: Any, *, expected_rev: int) -> Any:
            if len(raced) < 3:  # another attempt of the same claim commits first
                raced.append(other.engine.driver.step(item.sid).revision.rev)  # type: ignore[union-attr]
            return real_commit(revision, expected_rev=expected_rev)

        store.commit = commit  # type: ignore[method-assign]
        line = mine.run(item)
        assert raced == [1, 2, 3]
        assert line["fsm"] == "DONE" and line["status"] == "done"
        assert (line["verdict"], line["rev"]) == reference(1)[0]  # no step done twice
        assert store.verify_chain(item.sid).ok
    finally:
        mine.close()
        other.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_ray_gives_the_verdicts_of_an_in_process_run(
    backend: str, ray_address: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    db = str(tmp_path / "ray.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    n = 60
    items = read_claims(claims_file(tmp_path, n))
    seen: list[dict[str, Any]] = []
    progress: list[int] = []
    summary = run_batch(items, db, workers=2, on_result=seen.append,
                        on_progress=lambda done, total, s: progress.append(done))
    assert summary.runner == "ray" and summary.ok and summary.done == n
    assert progress == list(range(1, n + 1))
    assert {g["id"]: (g["verdict"], g["rev"]) for g in seen} == reference(n)
    with open_store(db) as store:
        report = fsck(store)
    assert report.ok and report.sessions == n
    again = run_batch(items, db, workers=2)
    assert again.skipped == n and again.done == 0


def test_in_process_on_postgres_runs_claims_side_by_side(pg_url: str, tmp_path: Path) -> None:
    from claimfsm.batch import worker

    n = 30
    items = read_claims(claims_file(tmp_path, n))
    seen: list[dict[str, Any]] = []
    summary = run_batch(items, pg_url, workers=0, on_result=seen.append)
    assert summary.runner == "in-process" and summary.ok and summary.done == n
    assert worker.threads_for(pg_url) > 1 and worker.threads_for(str(tmp_path / "x.db")) == 1
    assert [g["id"] for g in seen] == [c.id for c in items]  # input order, chunk by chunk
    assert {g["id"]: (g["verdict"], g["rev"]) for g in seen} == reference(n)
    assert not any(key[0] == pg_url for key in worker._IDLE)  # connections closed
    with open_store(pg_url) as store:
        assert fsck(store).ok


def test_a_cluster_nobody_runs_is_a_clean_error(tmp_path: Path) -> None:
    import socket

    from claimfsm.batch.cluster import ray_available
    from tests.support.components import missing

    if not ray_available():
        missing("Ray", "ray is not installed (pip install -e '.[ray]')")
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    src, db = claims_file(tmp_path, 3), str(tmp_path / "x.db")
    res = run("batch", str(src), "--db", db, "--ray", f"127.0.0.1:{port}", "--json")
    assert res.exit_code == 2, res.output
    assert "use a postgresql:// URL for a cluster" in res.stderr  # a SQLite --db on a cluster
    error = orjson.loads(res.stdout)["error"]
    assert error["code"] == "RAY_UNAVAILABLE" and f"127.0.0.1:{port}" in error["msg"]


def test_the_progress_line_shows_rate_and_eta(capsys: pytest.CaptureFixture[str]) -> None:
    from claimfsm.cli.batch import _Progress

    _Progress(False)(5, 10, 1.0)
    assert capsys.readouterr().err == ""  # not a terminal: nothing
    bar = _Progress(True)
    bar(5, 10, 2.0)
    bar(6, 10, 2.1)  # within a tenth of a second of the last line: not redrawn
    bar(10, 10, 4.0)
    err = capsys.readouterr().err
    assert "\r5/10 claims  2.5 claims/s  ETA 2s" in err and "6/10" not in err
    assert "\r10/10 claims  2.5 claims/s  ETA 0s" in err and err.endswith("\n")
    assert bar.finished == 10


def test_a_dropped_connection_costs_one_claim_and_a_rerun_heals_it(
    pg_url: str, tmp_path: Path
) -> None:
    import psycopg

    from claimfsm.batch import verify_chunk, worker

    items = [(c.id, c.claim) for c in read_claims(claims_file(tmp_path, 4))]
    assert all(g["status"] == "done" for g in verify_chunk(pg_url, items[:1]))
    with psycopg.connect(pg_url, autocommit=True) as admin:  # the server drops the others
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                      " WHERE pid <> pg_backend_pid() AND datname = current_database()")
    got = verify_chunk(pg_url, items)
    # The kept engine's connection is gone: its claim reports it, the engine is replaced.
    assert got[0]["status"] == "error" and got[0]["error"]["code"] == "STORE_UNAVAILABLE"
    assert [g["status"] for g in got[1:]] == ["done"] * 3
    again = verify_chunk(pg_url, items)
    assert all(g["fsm"] == "DONE" for g in again)
    worker.close_idle(pg_url)
    with open_store(pg_url) as store:
        assert fsck(store).ok and len(store.sessions()) == 4


def test_a_claim_the_engine_refuses_is_one_error_line(tmp_path: Path) -> None:
    from claimfsm.batch import verify_chunk, worker
    from claimfsm.skills.limits import MAX_CLAIM_CHARS

    db = str(tmp_path / "refuse.db")
    got = verify_chunk(db, [("big", "x" * (MAX_CLAIM_CHARS + 1)), ("ok", DEMO[0])])
    worker.close_idle(db)
    assert got[0]["status"] == "error" and got[0]["error"]["code"] == "INPUT_TOO_LARGE"
    assert got[1]["status"] == "done" and got[1]["fsm"] == "DONE"
    with open_store(db) as store:
        assert list(store.sessions()) == [got[1]["sid"]]  # nothing stored for the refused
