"""The runtime through the CLI: limit options, and tool events in ``history --json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine

CLAIM = "NASA landed on the Moon in 1969 and the Eiffel Tower is in Berlin."


def cli(*args: str) -> tuple[int, Any]:
    result = CliRunner().invoke(main, list(args))
    try:
        return result.exit_code, orjson.loads(result.output)
    except orjson.JSONDecodeError:
        return result.exit_code, result.output


def test_start_stores_the_limit_options_in_the_session_config(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    code, out = cli("start", "Honey never spoils.", "--db", db, "--json",
                    "--deadline", "30", "--max-tool-calls", "5")
    assert code == 0
    code, shown = cli("show", out["sid"], "--db", db, "--json")
    assert code == 0
    assert shown["state"]["config"] == {**Profile().config(), "deadline_s": 30.0,
                                        "max_tool_calls": 5}
    assert shown["state"]["runtime"]["deadline_at"] > out["ts"]


def test_bad_limit_options_are_usage_errors(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    for args in (("--max-tool-calls", "-1"), ("--deadline", "0"), ("--deadline", "soon")):
        result = CliRunner().invoke(main, ["start", "c", "--db", db, *args])
        assert result.exit_code == 2 and args[0] in result.output
        assert "Traceback" not in result.output


def test_verify_with_a_small_budget_ends_failed_with_the_code(tmp_path: Path) -> None:
    code, out = cli("verify", CLAIM, "--db", str(tmp_path / "cli.db"), "--json",
                    "--max-tool-calls", "2")
    assert out["fsm"] == "FAILED" and out["error"]["code"] == "BUDGET_EXCEEDED"
    assert code == 1  # a session that did not reach DONE is a failed command


def test_history_json_shows_each_tool_attempt(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    limit = {"capacity": 1, "per_seconds": 3600}
    with Engine.open(db) as eng:  # rate limits are session config: every process applies them
        sid = eng.driver.start(CLAIM, config={"rate_limits": {"search": limit}}).sid
    history: list[dict[str, Any]] = []
    for _ in range(12):
        cli("step", sid, "--db", db, "--json")
        code, history = cli("history", sid, "--db", db, "--json")
        assert code == 0
        if any(len(_invoked(r)) == 2 for r in history):
            break
    tool_events = [e for r in history for e in _invoked(r)]
    assert tool_events
    for event in tool_events:
        assert {"tool", "args", "ok", "code", "duration_ms", "attempt"} <= set(event)
        assert isinstance(event["duration_ms"], int) and event["duration_ms"] >= 0
    first = tool_events[0]
    assert (first["tool"], first["ok"], first["code"], first["attempt"]) == (
        "search", True, None, 1)
    assert first["args"] == {"q": "NASA Moon landing 1969", "lim": 4, "src": "wiki"}
    fallback = next(_invoked(r) for r in history if len(_invoked(r)) == 2)
    assert [(e["tool"], e["ok"], e["code"], e["attempt"]) for e in fallback] == [
        ("search", False, "RATE_LIMITED", 1), ("web_search", True, None, 2)]


def _invoked(revision: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in revision["events"] if e["type"] == "ToolInvoked"]
