"""The CLI side of record and replay: --record, export, replay FILE and replay DIR."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.replay.record import read_record
from tests.replay.sealing import resealed, unsealed

SESSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"


@pytest.fixture
def run(tmp_path: Path) -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_verify_record_export_and_replay_agree(run: CliRunner, tmp_path: Path) -> None:
    db, rec = str(tmp_path / "s.db"), tmp_path / "v.jsonl"
    code, _, _ = invoke(run, "verify", "Sydney is the capital of Australia.", "--db", db,
                        "--json", "--record", str(rec))
    assert code == 0
    sid = read_record(rec).header.sid
    code, out, _ = invoke(run, "export", sid, "--db", db)
    assert code == 0 and out.encode() == rec.read_bytes()
    code, out, _ = invoke(run, "replay", str(rec))
    assert code == 0 and out.startswith(f"replay {rec} (strict): ok,") and "REFUTES" in out


def test_start_and_step_append_to_one_record(run: CliRunner, tmp_path: Path) -> None:
    db, rec = str(tmp_path / "s.db"), tmp_path / "p.jsonl"
    code, out, _ = invoke(run, "start", "Honey never spoils.", "--db", db, "--record", str(rec))
    sid = out.strip()
    for _ in range(4):
        assert invoke(run, "step", sid, "--db", db, "--record", str(rec))[0] == 0
    record = read_record(rec)
    assert record.header.sid == sid and [s.rev for s in record.steps] == [1, 2, 3, 4]
    assert invoke(run, "replay", str(rec))[0] == 0
    # A step recorded elsewhere leaves this record behind: appending is refused.
    invoke(run, "step", sid, "--db", db)
    code, _, err = invoke(run, "step", sid, "--db", db, "--record", str(rec))
    assert code == 2 and "error: RECORD_MISMATCH:" in err and "ends at revision 4" in err
    # A fresh file starts with the session so far.
    late = tmp_path / "late.jsonl"
    assert invoke(run, "step", sid, "--db", db, "--record", str(late))[0] == 0
    assert [s.rev for s in read_record(late).steps] == [1, 2, 3, 4, 5, 6]
    assert invoke(run, "replay", str(late))[0] == 0


def test_replay_reports_a_divergence_and_exits_1(run: CliRunner, tmp_path: Path) -> None:
    objs = [orjson.loads(x) for x in (SESSIONS / "refuted.jsonl").read_bytes().splitlines()]
    step = next(o for o in objs if o["t"] == "step" and o["calls"])
    step["calls"][0]["value"]["facts"][0]["object"] = "Sydney"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(resealed(objs))  # a genuine record of other tool results
    code, out, _ = invoke(run, "replay", str(bad))
    assert code == 1
    assert "DIVERGED" in out and "state:    RETRIEVAL (retrieve)" in out
    assert "record:   verified" in out
    assert "path:     d.results[0].value.facts[0].object" in out
    assert "expected: Canberra" in out and "actual:   Sydney" in out
    assert "verdict:  REFUTES -> SUPPORTS (CHANGED)" in out
    code, out, _ = invoke(run, "replay", str(bad), "--json")
    report = orjson.loads(out)
    assert code == 1 and report["ok"] is False and report["verdict_changed"] is True
    assert report["divergence"]["path"] == "d.results[0].value.facts[0].object"


def test_a_malformed_record_is_a_clean_error_with_the_line(run: CliRunner,
                                                          tmp_path: Path) -> None:
    data = (SESSIONS / "supported.jsonl").read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: len(data) // 2])
    code, out, err = invoke(run, "replay", str(cut))
    n = data[: len(data) // 2].count(b"\n") + 1
    assert code == 2 and out == ""
    assert err.startswith(f"error: BAD_RECORD: {cut} line {n}: truncated")
    assert "Traceback" not in err
    code, out, _ = invoke(run, "replay", str(cut), "--json")
    assert code == 2 and orjson.loads(out)["error"]["code"] == "BAD_RECORD"


def test_replay_dir_prints_a_summary_table(run: CliRunner, tmp_path: Path) -> None:
    shutil.copytree(SESSIONS, tmp_path / "s", ignore=shutil.ignore_patterns("*.py"))
    code, out, _ = invoke(run, "replay", str(tmp_path / "s"))
    rows = out.splitlines()
    assert code == 0 and rows[0].split()[:4] == ["record", "mode", "steps", "result"]
    assert len(rows) == 2 + len(list(SESSIONS.glob("*.jsonl")))
    assert rows[-1].endswith("records replayed clean") and "DIVERGED" not in out
    old = Path(__file__).resolve().parents[1] / "data" / "records" / "supported-0.1.0.jsonl"
    shutil.copy(old, tmp_path / "s" / "old.jsonl")
    code, out, _ = invoke(run, "replay", str(tmp_path / "s"))
    row = next(r for r in out.splitlines() if r.startswith("old.jsonl"))
    assert code == 0 and row.split()[3] == "ok*"
    assert out.splitlines()[-1].endswith("; 1 unverified (format 1: no seals)")
    (tmp_path / "s" / "zz_bad.jsonl").write_bytes(b'{"t":"header"}\n')
    code, out, _ = invoke(run, "replay", str(tmp_path / "s"), "--json")
    summary = orjson.loads(out)["summary"]
    assert code == 2 and summary["bad"] == 1 and summary["ok"] == summary["total"] - 1
    assert summary["unverified"] == 1


def test_replay_of_an_empty_folder_says_so(run: CliRunner, tmp_path: Path) -> None:
    code, _, err = invoke(run, "replay", str(tmp_path))
    assert code == 2 and "error: NO_RECORDS:" in err


def test_export_of_an_unknown_session_is_a_clean_error(run: CliRunner, tmp_path: Path) -> None:
    code, _, err = invoke(run, "export", "nope", "--db", str(tmp_path / "e.db"))
    assert code == 2 and err.startswith("error: UNKNOWN_DB:")  # and no file is made
    assert not (tmp_path / "e.db").exists()
    assert invoke(run, "start", "Water boils.", "--db", str(tmp_path / "e.db"))[0] == 0
    code, _, err = invoke(run, "export", "nope", "--db", str(tmp_path / "e.db"))
    assert code == 2 and err.startswith("error: UNKNOWN_SESSION:")


def test_an_edited_record_is_tampered_naming_line_and_field(run: CliRunner,
                                                           tmp_path: Path) -> None:
    objs = [orjson.loads(x) for x in (SESSIONS / "refuted.jsonl").read_bytes().splitlines()]
    n, step = next((i, o) for i, o in enumerate(objs) if o["t"] == "step" and o["calls"])
    step["calls"][0]["attempt"] = 2  # a field the replay itself never compares
    bad = tmp_path / "edited.jsonl"
    bad.write_bytes(unsealed(objs))
    code, out, err = invoke(run, "replay", str(bad))
    assert code == 2 and out == ""
    assert err.startswith(f"error: RECORD_TAMPERED: {bad} line {n + 1}: calls[0].attempt: ")
    assert "edited after it was written" in err
    code, out, _ = invoke(run, "replay", str(bad), "--json")
    error = orjson.loads(out)["error"]
    assert code == 2 and error["code"] == "RECORD_TAMPERED"
    # Before anything ran: the tampering is not reported as a divergence.
    assert "DIVERGED" not in out


def test_a_format_1_record_replays_unverified(run: CliRunner) -> None:
    old = Path(__file__).resolve().parents[1] / "data" / "records" / "supported-0.1.0.jsonl"
    code, out, _ = invoke(run, "replay", str(old))
    assert code == 0 and out.rstrip().endswith(
        "unverified (a format 1 record: its lines carry no seals)")
    code, out, _ = invoke(run, "replay", str(old), "--json")
    report = orjson.loads(out)
    assert code == 0 and report["ok"] and report["verified"] is False and report["format"] == 1
    code, out, _ = invoke(run, "replay", str(SESSIONS / "supported.jsonl"), "--json")
    report = orjson.loads(out)
    assert code == 0 and report["verified"] is True and report["format"] == 2


def test_live_replay_with_a_garbage_index_is_a_code(run: CliRunner, tmp_path: Path) -> None:
    garbage = tmp_path / "g.db"
    garbage.write_bytes(bytes(range(256)) * 20)
    code, out, err = invoke(run, "replay", str(SESSIONS / "supported.jsonl"), "--mode", "live",
                            "--db", str(garbage))
    assert code == 2 and out == "" and err.startswith("error: STORE_NOT_DATABASE:")
    assert garbage.read_bytes() == bytes(range(256)) * 20
