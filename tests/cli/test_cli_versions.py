"""Versions at the command line: ``diagram --version``, ``step`` refusing a session of
another version (``--on-version continue``), ``batch`` likewise, ``show`` and ``sessions
--version``, ``check-compat`` over the fixtures and over a store, and a store written
before versions existed (sessions ``unknown``: listed, continued, fsck clean)."""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding
from claimfsm.engine.version import UNKNOWN
from claimfsm.skills import versions
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.sqlite import SQLiteStore
from tests.state.test_store_sqlite import _as_version_1

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def run(*args: str) -> Result:
    res = CliRunner().invoke(main, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output and "INTERNAL" not in res.output, res.output
    return res


def _version() -> str:
    res = run("diagram", "--version")
    assert res.exit_code == 0 and re.fullmatch(r"[0-9a-f]{16}\n", res.output)
    return res.output.strip()


def _started(db: Path) -> str:
    res = run("start", "The Eiffel Tower is in Paris.", "--db", str(db), "--json")
    assert res.exit_code == 0, res.output
    return str(json.loads(res.output)["sid"])


def _bump(monkeypatch: pytest.MonkeyPatch, skill: str = "parse_claim") -> None:
    # One past what the skill declares now: a real bump whatever today's number is.
    monkeypatch.setitem(versions.SKILL_VERSIONS, skill,
                        str(int(versions.SKILL_VERSIONS[skill]) + 1))


def test_diagram_version_is_what_new_sessions_store(tmp_path: Path) -> None:
    version = _version()
    sid = _started(tmp_path / "s.db")
    shown = json.loads(run("show", sid, "--db", str(tmp_path / "s.db"), "--json").output)
    assert shown["version"] == version
    assert shown["events"][0] == {"type": "SessionStarted", "version": version}


def test_a_bumped_skill_refuses_old_open_sessions_until_allowed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.db"
    sid = _started(db)
    old = _version()
    _bump(monkeypatch)
    new = _version()
    assert new != old
    res = run("step", sid, "--db", str(db), "--json")
    assert res.exit_code == 2
    err = json.loads(res.output)["error"]
    assert err["code"] == "VERSION_MISMATCH" and old in err["msg"] and new in err["msg"]
    res = run("step", sid, "--db", str(db), "--on-version", "continue", "--json")
    assert res.exit_code == 0, res.output
    history = json.loads(run("history", sid, "--db", str(db), "--json").output)
    assert history[-1]["skill"] == "migrate"
    assert history[-1]["events"] == [{"type": "VersionContinued", "from": old, "to": new}]
    assert run("step", sid, "--db", str(db)).exit_code == 0  # on the new version now
    listed = json.loads(run("sessions", "--db", str(db), "--json", "--version", new).output)
    assert [i["sid"] for i in listed["items"]] == [sid]
    assert json.loads(run("sessions", "--db", str(db), "--json", "--version",
                          old).output)["items"] == []


def test_batch_reports_a_version_mismatch_per_claim(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from claimfsm.batch.claims import BatchClaim
    from claimfsm.engine.runtime import Engine

    db = tmp_path / "b.db"
    claims = tmp_path / "c.jsonl"
    claims.write_text('{"id": 1, "claim": "Water boils at 100 degrees."}\n')
    item = BatchClaim(id=1, claim="Water boils at 100 degrees.")
    with Engine.open(str(db)) as eng:  # half done: a re-run continues it from its head
        eng.driver.start(item.claim, sid=item.sid, config=eng.profile.config())
        eng.driver.step(item.sid)
    _bump(monkeypatch, "retrieve")
    out = tmp_path / "out.jsonl"
    res = run("batch", str(claims), "--db", str(db), "--workers", "0", "--out", str(out))
    assert res.exit_code == 1
    line = json.loads(out.read_text().splitlines()[-1])
    assert line["status"] == "error" and line["error"]["code"] == "VERSION_MISMATCH"
    res = run("batch", str(claims), "--db", str(db), "--workers", "0", "--out", str(out),
              "--on-version", "continue")
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text().splitlines()[-1])["fsm"] == "DONE"


def test_a_store_from_before_versions_opens_lists_continues_and_passes_fsck(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from claimfsm.engine.runtime import Engine

    db = tmp_path / "old.db"
    # Revision 0 exactly as claimfsm wrote it before versions: no version in its event.
    with Engine.open(str(db)) as eng:
        first = eng.driver.start("Water boils at 100 degrees.", sid="old1",
                                 config=eng.profile.config(), version=UNKNOWN)
        assert first.events == [{"type": "SessionStarted"}]
        eng.driver.step("old1")
    with SQLiteStore(db) as store:
        assert store.get("old1", 0).events == [{"type": "SessionStarted"}]
    _as_version_1(str(db))  # and the file in the oldest on-disk layout (schema 1)
    _bump(monkeypatch)  # whatever the code is now, an old session is allowed
    res = run("check-compat", "--db", str(db), "--json")  # read-only: still schema 1
    assert json.loads(res.output)["sessions"][0]["version"] == UNKNOWN
    with closing(sqlite3.connect(db)) as conn, conn:
        assert conn.execute("SELECT value FROM st_meta WHERE key='schema'").fetchone() == ("1",)
    listed = json.loads(run("sessions", "--db", str(db), "--json").output)
    assert listed["items"][0]["version"] == UNKNOWN
    assert json.loads(run("sessions", "--db", str(db), "--json", "--version",
                          UNKNOWN).output)["items"][0]["sid"] == "old1"
    assert "version: unknown" in run("show", "old1", "--db", str(db)).output
    assert run("step", "old1", "--db", str(db)).exit_code == 0
    assert run("fsck", "--db", str(db)).output.startswith("ok: 1 sessions")


def test_check_compat_passes_the_fixtures_as_recorded() -> None:
    res = run("check-compat", str(FIXTURES), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    recorded = len(list((FIXTURES / "sessions").glob("*.jsonl")))
    assert out["summary"]["sessions"] == recorded == out["summary"]["same"]
    assert out["summary"]["affected"] == 0
    assert all(s["status"] == "same" for s in out["sessions"])


def _changed_aggregate(monkeypatch: pytest.MonkeyPatch) -> None:
    """verdict_aggregate decides differently (its version not bumped)."""
    original = DEFAULT_BINDINGS["verdict_aggregate"]

    def handler(inp: Any, ctx: SkillContext) -> Envelope:
        data = original.skill.handler(inp, ctx).to_dict()
        if data["d"] and "verdict" in data["d"]:
            data["d"]["verdict"]["label"] = "DISPUTED"
        return Envelope.model_validate(data)

    changed = dataclasses.replace(original, skill=dataclasses.replace(original.skill,
                                                                      handler=handler))
    assert isinstance(changed, Binding)
    monkeypatch.setitem(DEFAULT_BINDINGS._made, "verdict_aggregate", changed)  # type: ignore[attr-defined]


def test_check_compat_catches_a_behaviour_change_without_a_version_bump(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _changed_aggregate(monkeypatch)
    res = run("check-compat", str(FIXTURES))
    assert res.exit_code == 1
    line = next(x for x in res.output.splitlines() if "supported.jsonl" in x)
    assert "diverges at rev 7 (d.verdict.label, SUPPORTS, DISPUTED)" in line
    assert "AFFECTED" in line
    recorded = len(list((FIXTURES / "sessions").glob("*.jsonl")))
    assert re.search(rf"{recorded} sessions checked .*: .*diverges.*; [1-9] affected",
                     res.output)
    # Bumped: finished sessions of the older version may differ; nothing open is affected.
    _bump(monkeypatch, "verdict_aggregate")
    res = run("check-compat", str(FIXTURES), "--json")
    out = json.loads(res.output)
    assert res.exit_code == 0 and out["summary"]["diverges"] > 0
    assert out["summary"]["affected"] == 0


def test_check_compat_on_a_store_flags_open_sessions_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "s.db"
    assert run("verify", "Neil Armstrong walked on the Moon in 1969.", "--db",
               str(db)).exit_code == 0
    open_sid = _started(db)
    for _ in range(4):
        run("step", open_sid, "--db", str(db))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert run("check-compat", "--db", str(db)).exit_code == 0
    _changed_aggregate(monkeypatch)
    _bump(monkeypatch, "verdict_aggregate")
    res = run("check-compat", "--db", str(db), "--json")
    out = json.loads(res.output)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    by_sid = {s["sid"]: s for s in out["sessions"]}
    assert by_sid[open_sid]["open"] and by_sid[open_sid]["status"] == "same"
    done = next(s for s in out["sessions"] if not s["open"])
    assert done["status"] == "diverges" and not done["affected"]
    assert res.exit_code == 0


def test_check_compat_needs_one_source_and_draws_progress_on_a_terminal(
        capsys: pytest.CaptureFixture[str]) -> None:
    from claimfsm.cli.compat import _Progress

    res = run("check-compat")
    assert res.exit_code == 2 and "BAD_OPTION" in res.output
    bar = _Progress(3, enabled=True)
    bar.tick(3)
    assert "3/3 sessions" in capsys.readouterr().err


def test_check_compat_and_the_version_filter_on_postgres(pg_url: str) -> None:
    done = run("verify", "Sydney is the capital of Australia.", "--db", pg_url, "--json")
    assert done.exit_code == 0, done.output
    version = _version()
    res = run("check-compat", "--db", pg_url, "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["summary"] == {"version": version, "sessions": 1, "same": 1, "diverges": 0,
                              "cannot_continue": 0, "cannot_check": 0, "affected": 0}
    listed = json.loads(run("sessions", "--db", pg_url, "--json", "--version",
                            version).output)
    assert [i["version"] for i in listed["items"]] == [version]


def test_check_compat_in_processes_answers_as_in_one(tmp_path: Path) -> None:
    import shutil

    from claimfsm.replay.compat import CHUNK, checks_in_parallel

    records = sorted((FIXTURES / "sessions").glob("*.jsonl"))
    copies = []
    for i in range(CHUNK // len(records) + 2):  # more than one chunk of files
        for path in records:
            copy = tmp_path / f"{i:02d}-{path.name}"
            shutil.copy(path, copy)
            copies.append(str(copy))
    assert len(copies) > CHUNK
    one = list(checks_in_parallel(copies, 1))
    two = list(checks_in_parallel(copies, 2))
    assert one == two and [c.source for c in two] == copies
    assert {c.status for c in two} == {"same"}
    res = run("check-compat", str(tmp_path), "--jobs", "2", "--json")
    assert res.exit_code == 0 and json.loads(res.output)["summary"]["same"] == len(copies)


def test_records_from_before_versions_check_as_unknown() -> None:
    res = run("check-compat", str(ROOT / "tests" / "data" / "records"), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [(s["version"], s["status"]) for s in out["sessions"]] == [(UNKNOWN, "same")] * 2
