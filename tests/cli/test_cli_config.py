"""What the CLI hands the engine: the profile its options resolve to (the object itself),
``--db`` parsed once per command, and a config built without compiling a validator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import claimfsm.cli.common as common
from claimfsm.cli.main import main
from claimfsm.engine.profile import Profile
from tests.support.spies import db_parses, profiles_written

CLAIM = "Honey never spoils."


def run(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return orjson.loads(result.output) if "--json" in args else result.output


def test_the_resolved_profile_is_the_one_the_session_starts_with(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    resolved: list[Profile] = []

    def resolve(options: Any) -> Profile:
        resolved.append(Profile.model_validate(
            {k: v for k, v in options.items() if v is not None}))
        return resolved[-1]

    monkeypatch.setattr(common, "resolve_profile", resolve)
    written = profiles_written(monkeypatch)
    out = run("start", CLAIM, "--db", str(tmp_path / "p.db"), "--retrieval", "lexical",
              "--json")
    assert len(resolved) == 1 and written == resolved and written[0] is resolved[0]
    assert out["sid"]


@pytest.mark.parametrize("command", ["start", "step", "rollback", "ingest"])
def test_every_command_parses_db_once(command: str, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "once.db")
    sid = run("start", CLAIM, "--db", db, "--json")["sid"]
    run("step", sid, "--db", db)
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "d1", "title": "Honey", "text": "Honey keeps for years."}\n')
    args = {"start": ["start", CLAIM], "step": ["step", sid],
            "rollback": ["rollback", sid, "--to", "0"],
            "ingest": ["ingest", str(docs), "--no-embed"]}[command]
    parses = db_parses(monkeypatch)
    run(*args, "--db", db)
    assert parses == [db]


def test_step_builds_its_config_without_compiling_a_validator(tmp_path: Path) -> None:
    db = str(tmp_path / "light.db")
    sid = run("start", CLAIM, "--db", db, "--json")["sid"]
    probe = f"""
import sys
from claimfsm.cli import main
try:
    main(["step", {sid!r}, "--db", {db!r}])
except SystemExit:
    pass
from claimfsm.engine.config import EngineConfig
print("COMPLETE", EngineConfig.__pydantic_complete__, file=sys.stderr)
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)
    assert "COMPLETE False" in proc.stderr, proc.stderr[-2000:]
    assert "PARSE_CLAIM -> RETRIEVAL" in proc.stdout
