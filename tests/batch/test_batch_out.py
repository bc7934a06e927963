"""``claimfsm batch --out`` is appended to, never truncated: a re-run after an interrupted
run keeps that run's lines, writes only what is new, and leaves one line per claim id;
a line cut short by a kill is cut off; another program's file is refused untouched."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.batch import output
from claimfsm.cli.main import main
from claimfsm.engine.runtime import FIXTURES

DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def claims_file(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"c{i}", "claim": DEMO[i % len(DEMO)]}) + "\n"
                            for i in range(n)))
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_an_interrupted_rerun_keeps_the_first_run_s_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, db, out = claims_file(tmp_path / "c.jsonl", 12), str(tmp_path / "b.db"), \
        tmp_path / "out.jsonl"
    assert run("batch", str(src), "--db", db, "--workers", "0", "--out", str(out)).exit_code == 0
    first = lines(out)
    assert len(first) == 12
    # The second run is stopped (Ctrl-C) after a few claims: was, --out had been
    # truncated when it started, so the first run's lines were gone.
    from claimfsm.cli import batch as batch_cli

    calls = []
    real = batch_cli._Progress.__call__

    def stop(self: Any, finished: int, total: int, seconds: float) -> None:
        calls.append(finished)
        if finished == 3:
            raise KeyboardInterrupt
        real(self, finished, total, seconds)

    monkeypatch.setattr(batch_cli._Progress, "__call__", stop)
    res = run("batch", str(src), "--db", db, "--workers", "0", "--out", str(out))
    assert res.exit_code == 130 and "INTERRUPTED" in res.output
    assert lines(out) == first


def test_a_rerun_appends_what_is_new_and_folds_to_one_line_per_id(tmp_path: Path) -> None:
    db, out = str(tmp_path / "b.db"), tmp_path / "out.jsonl"
    half = claims_file(tmp_path / "half.jsonl", 6)
    assert run("batch", str(half), "--db", db, "--workers", "0", "--out", str(out)).exit_code == 0
    first = lines(out)
    # Another program's claim id, and a line this run will supersede (a failed attempt).
    stale = {"id": "c7", "sid": "b" + "0" * 20, "verdict": None, "rev": None, "fsm": None,
             "status": "error", "error": {"code": "STORE_BUSY", "msg": "locked"}}
    other = {"id": "elsewhere", "sid": "b" + "1" * 20, "verdict": "SUPPORTS", "rev": 10,
             "fsm": "DONE", "status": "done", "from_rev": 0}
    with out.open("ab") as f:
        f.write(orjson.dumps(stale) + b"\n" + orjson.dumps(other) + b"\n")
    full = claims_file(tmp_path / "full.jsonl", 12)
    res = run("batch", str(full), "--db", db, "--workers", "0", "--out", str(out), "--json")
    assert res.exit_code == 0 and orjson.loads(res.output)["skipped"] == 6
    got = lines(out)
    ids = [g["id"] for g in got]
    assert len(ids) == len(set(ids)) == 13  # twelve claims and the other program's line
    assert got[:6] == first  # the first run's lines, as written (not "skipped" copies)
    assert other in got and stale not in got
    by_id = {g["id"]: g for g in got}
    assert by_id["c7"]["status"] == "done" and by_id["c7"]["fsm"] == "DONE"


def test_a_line_cut_short_by_a_kill_is_cut_off(tmp_path: Path) -> None:
    src, db, out = claims_file(tmp_path / "c.jsonl", 4), str(tmp_path / "b.db"), \
        tmp_path / "out.jsonl"
    assert run("batch", str(src), "--db", db, "--workers", "0", "--out", str(out)).exit_code == 0
    whole = out.read_bytes()
    out.write_bytes(whole + b'{"id": "c9", "sid": "b12')  # the last write of a killed run
    assert run("batch", str(src), "--db", db, "--workers", "0", "--out", str(out)).exit_code == 0
    assert out.read_bytes() == whole


@pytest.mark.parametrize("content", [b"name,score\nalice,3\n", b'{"id": 1}\n',
                                     b'{"id": 1, "sid": "x", "status": "done"}\nnot json\n'])
def test_another_program_s_file_is_refused_before_anything_runs(
        tmp_path: Path, content: bytes) -> None:
    src, db, out = claims_file(tmp_path / "c.jsonl", 2), tmp_path / "b.db", \
        tmp_path / "out.csv"
    out.write_bytes(content)
    res = run("batch", str(src), "--db", str(db), "--workers", "0", "--out", str(out),
              "--json")
    assert res.exit_code == 2
    error = orjson.loads(res.output)["error"]
    assert error["code"] == "OUT_WRITE_FAILED" and "is not a batch result line" in error["msg"]
    assert out.read_bytes() == content and not db.exists()


class FillsUp:
    """A file that takes ``room`` writes, then fails as a full disk does."""

    def __init__(self, inner: Any, room: int) -> None:
        self.inner, self.room = inner, room

    def write(self, data: bytes) -> int:
        if self.room == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= 1
        return int(self.inner.write(data))

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()


def test_a_full_disk_mid_run_is_a_code_and_the_rerun_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, db, out = claims_file(tmp_path / "c.jsonl", 6), str(tmp_path / "b.db"), \
        tmp_path / "out.jsonl"
    real = output.ResultFile.__init__

    def opened(self: output.ResultFile, path: Path) -> None:
        real(self, path)
        self._sink = FillsUp(self._sink, 2)  # type: ignore[assignment]

    monkeypatch.setattr(output.ResultFile, "__init__", opened)
    res = run("batch", str(src), "--db", db, "--workers", "0", "--out", str(out), "--json")
    assert res.exit_code == 2  # was: OPEN_FAILED (any OSError), naming no file
    error = orjson.loads(res.output)["error"]
    assert error["code"] == "OUT_WRITE_FAILED" and "No space left on device" in error["msg"]
    assert len(lines(out)) == 2
    monkeypatch.setattr(output.ResultFile, "__init__", real)
    assert run("batch", str(src), "--db", db, "--workers", "0", "--out", str(out)).exit_code == 0
    assert sorted(g["id"] for g in lines(out)) == [f"c{i}" for i in range(6)]
