"""The claims file of ``claimfsm batch`` is streamed and bounded (a line, the lines, the
bytes), every limit tested at the limit and one past it; ``--workers`` is bounded by the
CPUs Ray reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.batch import BatchInputError, ClaimsFile, read_claims, run_batch
from claimfsm.batch import claims as claims_mod
from claimfsm.batch.claims import MAX_CLAIMS_LINE_BYTES
from claimfsm.cli.main import main
from claimfsm.skills.tools import bounded
from claimfsm.skills.tools.bounded import Bounds

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _line(cid: str, claim: str = "Water boils at 100 degrees.") -> bytes:
    return orjson.dumps({"id": cid, "claim": claim}) + b"\n"


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_dev_zero_is_refused_after_one_line_not_read_to_memory_error(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    started = time.monotonic()
    res = run("batch", "/dev/zero", "--db", str(db), "--workers", "0", "--json")
    assert res.exit_code == 2
    error = orjson.loads(res.output)["error"]
    assert error["code"] == "BAD_CLAIMS"
    assert f"line 1: more than {MAX_CLAIMS_LINE_BYTES} bytes" in error["msg"]
    assert time.monotonic() - started < 60 and not db.exists()


def test_a_line_at_the_limit_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    base = len(_line(""))
    at = tmp_path / "at.jsonl"
    at.write_bytes(_line("x" * (MAX_CLAIMS_LINE_BYTES - base)))
    assert len(at.read_bytes()) == MAX_CLAIMS_LINE_BYTES
    assert len(read_claims(at)) == 1
    over = tmp_path / "over.jsonl"
    over.write_bytes(_line("x" * (MAX_CLAIMS_LINE_BYTES - base + 1)))
    with pytest.raises(BatchInputError, match=f"line 1: more than {MAX_CLAIMS_LINE_BYTES}"):
        read_claims(over)


def test_the_number_of_lines_and_the_bytes_are_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(_line("a") + b"\n" + _line("b"))
    monkeypatch.setattr(claims_mod, "_BOUNDS", Bounds(line=MAX_CLAIMS_LINE_BYTES, lines=3))
    assert len(read_claims(path)) == 2  # three lines, the blank one counted
    path.write_bytes(_line("a") + b"\n" + _line("b") + _line("c"))
    with pytest.raises(BatchInputError, match="more than 3 lines"):
        read_claims(path)
    size = len(path.read_bytes())
    monkeypatch.setattr(claims_mod, "MAX_CLAIMS_FILE_BYTES", size - 1)
    with pytest.raises(BatchInputError, match=f"more than {size - 1} bytes"):
        read_claims(path)


def test_claims_are_read_again_from_the_file_not_held(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(_line(f"c{i}") for i in range(5)))
    claims = read_claims(path)
    assert isinstance(claims, ClaimsFile) and len(claims) == 5
    assert not hasattr(claims, "claims") and not isinstance(claims, list)
    first = [c.id for c in claims]
    assert first == [c.id for c in claims] == [f"c{i}" for i in range(5)]
    path.write_bytes(b"".join(_line(f"c{i}") for i in range(6)))  # changed after the check
    with pytest.raises(BatchInputError, match="changed since it was checked"):
        list(claims)


def test_an_id_used_twice_is_found_past_the_in_memory_threshold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "SPILL", 5)  # the ids move to a temporary file at 6
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"".join(_line(f"c{i}") for i in range(20)) + _line("c2"))
    with pytest.raises(BatchInputError, match="line 21: id 'c2' already used on line 3"):
        read_claims(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_claims_from_a_pipe_are_checked_and_kept_for_the_run(tmp_path: Path) -> None:
    pipe = tmp_path / "claims.pipe"
    os.mkfifo(pipe)

    def feed() -> None:
        with open(pipe, "wb") as w:
            w.write(b"".join(_line(f"p{i}") for i in range(3)))

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    claims = read_claims(pipe)
    writer.join(timeout=10)
    try:
        assert len(claims) == 3
        assert [c.id for c in claims] == [c.id for c in claims] == ["p0", "p1", "p2"]
    finally:
        claims.close()


def test_more_workers_than_cpus_is_refused_before_anything_is_opened(tmp_path: Path) -> None:
    from claimfsm.batch.cluster import ray_available
    from tests.support.components import missing

    if not ray_available():
        missing("Ray", "ray is not installed (pip install -e '.[ray]')")
    src, db = tmp_path / "c.jsonl", tmp_path / "x.db"
    src.write_bytes(_line("a"))
    res = run("batch", str(src), "--db", str(db), "--workers", "1000000", "--json")
    assert res.exit_code == 2
    error = orjson.loads(res.stdout)["error"]
    assert error["code"] == "TOO_MANY_WORKERS"
    assert "--workers 1000000: " in error["msg"] and " reports " in error["msg"]
    assert not db.exists()


def test_a_running_ray_bounds_workers_by_its_cpus(ray_address: str, tmp_path: Path) -> None:
    from claimfsm.batch.cluster import TooManyWorkers

    src = tmp_path / "c.jsonl"
    src.write_bytes(b"".join(_line(f"c{i}") for i in range(4)))
    with pytest.raises(TooManyWorkers, match="the running Ray reports 2 CPUs; use at most 2"):
        run_batch(read_claims(src), str(tmp_path / "x.db"), workers=3)
    assert not (tmp_path / "x.db").exists()  # refused before the store was opened
    summary = run_batch(read_claims(src), str(tmp_path / "y.db"), workers=2)  # at the limit
    assert summary.ok and summary.workers == 2
    summary = run_batch(read_claims(src), str(tmp_path / "z.db"))  # default: every CPU
    assert summary.ok and summary.workers == 2


def _cli(*args: str, new_session: bool = False) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    return subprocess.Popen([sys.executable, "-c", "from claimfsm.cli import main; main()",
                             *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=new_session)


def test_a_cluster_bounds_workers_by_its_cpus(ray_address: str, tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_bytes(_line("a"))
    proc = _cli("batch", str(src), "--db", str(tmp_path / "x.db"), "--ray", ray_address,
                "--workers", "3", "--json")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err.decode()[-2000:]
    error = orjson.loads(out)["error"]
    assert error["code"] == "TOO_MANY_WORKERS"
    assert f"the Ray cluster at {ray_address} reports 2 CPUs" in error["msg"]


def _in_session(sid: int) -> list[str]:
    """The processes (but zombies) of session ``sid``: the batch, Ray's, their workers."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            raw = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2:].split()
        if entry.name.isdigit() and fields[0] != b"Z" and int(fields[3]) == sid:
            found.append(entry.name + " " + raw[:raw.rfind(b")") + 1].decode(errors="replace"))
    return found


def _started_ray(proc: subprocess.Popen[bytes], out: Path) -> None:
    deadline = time.monotonic() + 240
    while not (out.exists() and out.stat().st_size > 0):  # a first chunk came back
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        assert time.monotonic() < deadline, "the batch wrote nothing"
        time.sleep(0.1)


def _gone(sid: int, within: float) -> list[str]:
    deadline = time.monotonic() + within
    while (left := _in_session(sid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_stopped_or_killed_batch_leaves_no_ray_process(how: str, tmp_path: Path) -> None:
    from claimfsm.batch.cluster import ray_available
    from tests.support.components import missing

    if not ray_available():
        missing("Ray", "ray is not installed (pip install -e '.[ray]')")
    demo = json.loads((ROOT / "fixtures" / "demo_claims.json").read_text())
    src, out = tmp_path / "c.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(b"".join(_line(f"c{i}", demo[i % len(demo)]["claim"])
                             for i in range(3000)))
    # Its own session, so every process it starts (Ray's too) can be found by it.
    proc = _cli("batch", str(src), "--db", str(tmp_path / "x.db"), "--workers", "1",
                "--out", str(out), new_session=True)
    try:
        _started_ray(proc, out)
        assert len(_in_session(proc.pid)) > 3  # the driver, Ray's head and a worker
        proc.send_signal(15 if how == "SIGTERM" else 9)
        got, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if how == "SIGTERM":
        assert proc.returncode == 130, (got.decode()[-3000:], err.decode()[-3000:])
        assert "error: INTERRUPTED: stopped by SIGTERM after" in err.decode()
    # Was: Ray's two agents lived on for about a minute after a SIGKILL.
    assert _gone(proc.pid, 20) == []
