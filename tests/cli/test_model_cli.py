"""The model options on the command line and in claimfsm.toml, and the API key that is
never stored: not in the store, the record, the CLI's output, its errors, the logs or the
UI's pages."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.profile import resolve_profile
from claimfsm.testing.model_server import Reply, ScriptedModelServer
from tests.support.components import need_module


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def _cli(*args: str, env: dict[str, str] | None = None) -> Any:
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return result


def test_the_key_is_sent_and_stored_nowhere(
    server: ScriptedModelServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-claimfsm-" + secrets.token_hex(16)
    env = {"CLAIMFSM_TEST_MODEL_KEY": key}
    db, record = tmp_path / "s.db", tmp_path / "s.jsonl"
    caplog.set_level(logging.DEBUG)
    model = ("--planner", "model", "--judge", "model", "--model-url", server.url,
             "--model", "m", "--api-key-env", "CLAIMFSM_TEST_MODEL_KEY")
    out = _cli("verify", "Honey never spoils.", "--db", str(db), "--record", str(record),
               "--json", *model, env=env)
    assert out.exit_code == 0, out.output
    sid = orjson.loads(out.output)["sid"]
    assert server.headers and all(h["Authorization"] == f"Bearer {key}" for h in server.headers)
    # A failing call's message too: the server answers 401 (as OpenAI does to a bad key).
    server.answer = lambda req: Reply(401, b'{"error": "bad key"}')
    failed = _cli("verify", "Honey never spoils.", "--db", str(db), "--json", *model,
                  "--on-model-error", "fail", env=env)
    outputs = [out.output, failed.output]
    for command in (("show", sid), ("history", sid), ("export", sid)):
        outputs.append(_cli(*command, "--db", str(db), env=env).output)
    need_module("starlette", "ui")
    from tests.support.ui_helpers import app_client

    with app_client(db) as client:
        pages = [client.get(path).text for path in (
            "/", f"/sessions/{sid}", f"/api/v1/sessions/{sid}",
            f"/api/v1/sessions/{sid}/history", f"/api/v1/sessions/{sid}/record")]
    assert all(sid in page for page in pages[1:])  # real pages of the session
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert key.encode() not in stored  # the store (with its WAL), the record
    for text in [*outputs, *pages, caplog.text]:
        assert key not in text
    assert "CLAIMFSM_TEST_MODEL_KEY" in stored.decode("utf-8", "replace")  # the name is kept


def test_the_model_keys_of_claimfsm_toml(tmp_path: Path) -> None:
    (tmp_path / "claimfsm.toml").write_text(
        'planner = "model"\njudge = "model"\nmodel_url = "http://127.0.0.1:8080/v1"\n'
        'model = "tiny"\napi_key_env = "MY_KEY"\non_model_error = "fail"\n'
        "max_tokens_total = 5000\n")
    profile = resolve_profile({"model": "other"}, cwd=tmp_path)
    assert (profile.planner, profile.judge, profile.model, profile.api_key_env,
            profile.on_model_error, profile.max_tokens_total) == (
        "model", "model", "other", "MY_KEY", "fail", 5000)
    assert profile.config()["max_tokens_total"] == 5000


@pytest.mark.parametrize(("args", "field"), [
    (("--planner", "model"), "model_url"),
    (("--judge", "model", "--model-url", "http://x/v1"), "model"),
    (("--planner", "model", "--model-url", "ftp://x", "--model", "m"), "model_url"),
])
def test_a_model_skill_without_its_model_is_a_clear_error(args: tuple[str, ...], field: str,
                                                         tmp_path: Path) -> None:
    out = _cli("verify", "Honey never spoils.", "--db", str(tmp_path / "x.db"), "--json", *args)
    assert out.exit_code == 2
    error = orjson.loads(out.output)["error"]
    assert error["code"] == "BAD_PROFILE" and field in error["msg"]
    assert "Traceback" not in out.output


@pytest.mark.parametrize("command", ["verify", "start", "batch", "eval"])
def test_every_profile_command_takes_the_model_options(command: str) -> None:
    text = _cli(command, "--help").output
    for option in ("--model-url", "--model", "--api-key-env", "--planner", "--judge",
                   "--on-model-error", "--max-tokens-total"):
        assert option in text, (command, option)
