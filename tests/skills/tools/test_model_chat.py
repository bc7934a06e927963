"""The model.chat tool against a scripted OpenAI-compatible server on 127.0.0.1: the
request it sends, the answer it parses, retries honouring Retry-After, the failures as
codes, the token budget, per-model limits, the response cache and the blobs it records."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.skills.context import SystemClock
from claimfsm.skills.tools.core import BudgetTracker
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.limits import RateLimit, ToolLimits
from claimfsm.skills.tools.model_cache import ResponseCache
from claimfsm.skills.tools.model_chat import MAX_HTTP_ATTEMPTS, forget_format, model_tool
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.testing.model_server import Reply, ScriptedModelServer, scripted_post

SCHEMA = {"type": "object", "properties": {"label": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["label"]}


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def _executor(**kwargs: Any) -> Executor:
    resources = kwargs.pop("resources", {})
    return Executor(ToolRegistry([model_tool(sleep=kwargs.pop("sleep", time.sleep))]),
                    clock=SystemClock(), resources=resources, **kwargs)


def _args(url: str, **extra: Any) -> dict[str, Any]:
    return {"url": url, "model": "tiny", "messages": [{"role": "user", "content": "Yes?"}],
            "schema": SCHEMA, "max_tokens": 16, **extra}


def test_a_call_sends_the_schema_as_response_format_and_parses_the_answer(server):
    ex = _executor(budget=BudgetTracker(max_tokens=1000))
    call = ex.call("model.chat", _args(server.url))
    assert call.ok, call.message
    sent = server.requests[0]
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert sent["model"] == "tiny" and sent["temperature"] == 0.0
    assert call.value is not None and call.value["content"] == {"label": "yes"}
    used = call.value["usage"]["total_tokens"]
    assert used > 0 and ex.budget is not None and ex.budget.tokens == used
    assert ex.runtime_state()["budget"] == {"calls": 1, "tokens": used}


def test_the_event_keeps_request_and_response_as_content_addressed_blobs(server):
    ex = _executor()
    ex.call("model.chat", _args(server.url))
    event = ex.events[0]
    assert event["type"] == "ToolInvoked" and event["tool"] == "model.chat"
    assert set(event["blobs"]) == {event["request"], event["response"]}
    for digest, blob in event["blobs"].items():
        canonical = orjson.dumps(blob, option=orjson.OPT_SORT_KEYS)
        assert digest == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert event["blobs"][event["request"]] == server.requests[0]  # exactly what was sent
    assert event["usage"]["total_tokens"] > 0 and event["latency_ms"] >= 0


def test_the_key_goes_in_the_header_only(server, monkeypatch):
    monkeypatch.setenv("TINY_KEY", "sk-very-secret-123")
    ex = _executor()
    call = ex.call("model.chat", _args(server.url, api_key_env="TINY_KEY"))
    assert call.ok
    assert server.headers[0]["Authorization"] == "Bearer sk-very-secret-123"
    kept = orjson.dumps([c.model_dump() for c in ex.calls]) + orjson.dumps(ex.events)
    assert b"sk-very-secret-123" not in kept


def test_an_unset_key_variable_is_a_code_naming_it(server, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    call = _executor().call("model.chat", _args(server.url, api_key_env="NO_SUCH_KEY_VAR"))
    assert call.code == "MODEL_KEY_MISSING" and "NO_SUCH_KEY_VAR" in call.message
    assert server.requests == []


def test_a_429_is_retried_after_its_retry_after():
    answers = iter([Reply(429, b"slow down", {"Retry-After": "1"})])
    waited: list[float] = []

    def answer(req: dict[str, Any]) -> Any:
        return next(answers, {"label": "no"})

    with ScriptedModelServer(answer) as srv:
        call = _executor(sleep=waited.append).call("model.chat", _args(srv.url))
    assert call.ok and call.value is not None and call.value["attempts"] == 2
    assert waited == [1.0]


@pytest.mark.parametrize(("reply", "code"), [
    (Reply(429, b"no", {"Retry-After": "0"}), "MODEL_RATE_LIMITED"),
    (Reply(503, b"down"), "MODEL_UNREACHABLE"),
    (Reply(200, b"<html><body>Login</body></html>", {"Content-Type": "text/html"}),
     "MODEL_BAD_RESPONSE"),
    (Reply(200, b'{"choices": []}'), "MODEL_BAD_RESPONSE"),
    (Reply(404, b"not found"), "MODEL_BAD_RESPONSE"),
])
def test_failures_end_in_their_code(reply: Reply, code: str):
    with ScriptedModelServer(lambda req: reply) as srv:
        call = _executor(sleep=lambda s: None).call("model.chat", _args(srv.url))
        tries = len(srv.requests)
    assert not call.ok and call.code == code, call.message
    retried = code in ("MODEL_RATE_LIMITED", "MODEL_UNREACHABLE")
    assert tries == (MAX_HTTP_ATTEMPTS if retried else 1)
    assert call.value is not None and call.value["request"].startswith("sha256:")


def test_a_refused_connection_is_unreachable():
    with ScriptedModelServer() as srv:
        url = srv.url
    # stopped: the port is closed
    call = _executor(sleep=lambda s: None).call("model.chat", _args(url))
    assert call.code == "MODEL_UNREACHABLE"


def test_a_retry_past_the_deadline_is_not_waited_for():
    with ScriptedModelServer(lambda req: Reply(429, b"", {"Retry-After": "600"})) as srv:
        ex = _executor(deadline=datetime.now(UTC) + timedelta(seconds=5))
        start = time.monotonic()
        call = ex.call("model.chat", _args(srv.url))
    assert call.code == "MODEL_RATE_LIMITED" and "deadline" in call.message
    assert time.monotonic() - start < 5


def test_a_spent_token_budget_refuses_the_call(server):
    ex = _executor(budget=BudgetTracker(max_tokens=10, tokens=10))
    call = ex.call("model.chat", _args(server.url))
    assert call.code == "TOKEN_BUDGET_EXCEEDED" and server.requests == []


def test_per_model_rate_limits(server):
    limits = ToolLimits(rate={"model.chat:tiny": RateLimit(1, 3600)})
    ex = _executor(resources={"model_limits": limits})
    assert ex.call("model.chat", _args(server.url)).ok
    assert ex.call("model.chat", _args(server.url)).code == "RATE_LIMITED"
    other = ex.call("model.chat", {**_args(server.url), "model": "other"})
    assert other.ok and len(server.requests) == 2


def test_the_response_cache_answers_a_repeated_request(server, tmp_path: Path):
    cache = ResponseCache(tmp_path / "cache")
    first = _executor(resources={"model_cache": cache}, budget=BudgetTracker(max_tokens=99))
    a = first.call("model.chat", _args(server.url))
    second = _executor(resources={"model_cache": cache}, budget=BudgetTracker(max_tokens=99))
    b = second.call("model.chat", _args(server.url))
    assert len(server.requests) == 1
    assert a.value is not None and b.value is not None and b.value["cached"] is True
    assert b.value["content"] == a.value["content"] and second.budget is not None
    assert second.budget.tokens == 0  # a cached answer costs nothing


def test_bad_params_are_bad_args():
    call = _executor().call("model.chat", {"url": "x", "model": "m", "messages": []})
    assert call.code == "BAD_ARGS" and "messages" in call.message


def _refuses_the_schema_form(request: dict[str, Any]) -> Any:
    # llama-cpp-python's server answers so: the schema only as json_object.
    if request["response_format"]["type"] == "json_schema":
        return Reply(status=400, body=b'{"error": "response_format not supported"}')
    return {"label": "yes"}


def _formats(srv: ScriptedModelServer) -> list[str]:
    return [r["response_format"]["type"] for r in srv.requests]


def test_a_server_refusing_the_schema_form_is_asked_as_json_object_until_forgotten():
    with ScriptedModelServer(_refuses_the_schema_form) as srv:
        ex = _executor()
        assert ex.call("model.chat", _args(srv.url)).ok
        assert _formats(srv) == ["json_schema", "json_object"]
        assert ex.call("model.chat", _args(srv.url + "/")).ok
        assert _formats(srv) == ["json_schema", "json_object", "json_object"]
        forget_format(srv.url + "/")
        assert ex.call("model.chat", _args(srv.url)).ok
        assert _formats(srv)[3:] == ["json_schema", "json_object"]


def test_a_new_scripted_server_on_a_remembered_address_is_asked_the_openai_way():
    # A port handed out again under load once made another test see json_object.
    srv = ScriptedModelServer()
    refused = Executor(ToolRegistry([model_tool(post=scripted_post(_refuses_the_schema_form))]),
                       clock=SystemClock())
    assert refused.call("model.chat", _args(srv.url)).ok  # remembers srv.url's refusal
    with srv:
        assert _executor().call("model.chat", _args(srv.url)).ok
    assert _formats(srv) == ["json_schema"]
