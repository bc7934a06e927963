"""The ``model.chat`` tool: one Chat Completions call to an OpenAI-compatible server.

OpenAI, vLLM, llama.cpp's server, Ollama and LM Studio all speak it. The call is a tool
like any other, under the runtime's rules: the session's deadline bounds it (with
``timeout_s``), 429 and 5xx answers are retried within it honouring ``Retry-After``, the
per-model rate and concurrency limits of the ``model_limits`` resource apply (keys
``model.chat:<model>``), and the tokens it uses are counted into the session's budget
(``max_tokens_total``), which no rollback or fork gives back.

The API key is read from the environment variable the call names (``api_key_env``) at the
moment of the call and sent only in the ``Authorization`` header: it is in no argument,
result, event or message. What was asked and answered is kept as content-addressed blobs
(``sha256:`` digests) on the ``ToolInvoked`` event, with the usage and the latency.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import orjson

from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.skills.tools.model_http import HttpAnswer, HttpFailure, post_json, retry_after
from claimfsm.skills.tools.model_types import Params, Result, Usage, address, body_of, digest

__all__ = ["MAX_HTTP_ATTEMPTS", "MODEL_TOOL", "Params", "Result", "forget_format", "model_tool",
           "telemetry"]

MODEL_TOOL = "model.chat"
MAX_HTTP_ATTEMPTS = 3
"""HTTP attempts per call: the first and two retries of a 429, a 5xx or a lost connection."""
_BACKOFF_S = 0.5
_RETRIED = frozenset({"MODEL_UNREACHABLE"})
#: Endpoints that refused ``json_schema`` and took ``json_object`` (this process).
_OBJECT_FORMAT: set[str] = set()


def forget_format(url: str) -> None:
    """Forget that the server at ``url`` (a ``model_url``) refused ``json_schema``: a new
    server answers there now (a restarted or upgraded one, or a test's server on a port the
    system handed out again), and it is asked in the OpenAI form first."""
    _OBJECT_FORMAT.discard(url.rstrip("/") + "/chat/completions")

#: ``post(url, body, *, headers, timeout) -> HttpAnswer``, or an HttpFailure.
Post = Callable[..., HttpAnswer]


def _seconds_left(params: Params, context: ToolContext) -> float:
    left = params.timeout_s
    if context.deadline is not None:
        left = min(left, (context.deadline - context.clock.now()).total_seconds())
    return left


def _parse(body: bytes) -> tuple[dict[str, Any], str, str | None, Usage]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise HttpFailure(f"the answer is not JSON ({body[:40]!r}...)",
                          code="MODEL_BAD_RESPONSE") from None
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"]
        if not isinstance(text, str):
            raise TypeError("message.content is not a string")
        raw_usage = data.get("usage") or {}
        usage = Usage(**{k: int(raw_usage.get(k) or 0) for k in Usage.model_fields})
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise HttpFailure(f"not a Chat Completions answer ({type(exc).__name__}: {exc})",
                          code="MODEL_BAD_RESPONSE") from None
    return data, text, choice.get("finish_reason"), usage


def _json_of(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


class _Call:
    """The state of one tool call across its HTTP attempts."""

    def __init__(self, params: Params, context: ToolContext, sleep: Callable[[float], None],
                 post: Post) -> None:
        self.params = params
        self.context = context
        self.sleep = sleep
        self.post = post
        self.url = params.url.rstrip("/") + "/chat/completions"
        self.encode("json_object" if self.url in _OBJECT_FORMAT else "json_schema")
        self.attempts = 0
        # From the injected clock, like every duration the runtime records: a run on a
        # fixed clock (a test, a fixture) records the same bytes every time.
        self.started = context.clock.now()

    def encode(self, fmt: str) -> None:
        self.format = fmt
        self.request_bytes = orjson.dumps(body_of(self.params, fmt),
                                          option=orjson.OPT_SORT_KEYS)
        self.request = digest(self.request_bytes)

    def partial(self, response: str = "") -> Result:
        return Result(request=self.request, response=response, attempts=self.attempts,
                      latency_ms=round((self.context.clock.now() - self.started)
                                       / timedelta(milliseconds=1), 3),
                      format=self.format)

    def headers(self) -> dict[str, str]:
        name = self.params.api_key_env
        if not name:
            return {}
        key = os.environ.get(name)
        if not key:
            raise HttpFailure(f"api_key_env: the environment variable {name} is not set",
                              code="MODEL_KEY_MISSING")
        return {"Authorization": f"Bearer {key}"}

    def exchange(self) -> bytes:
        """The answer body of a 2xx, after the retries; an :class:`HttpFailure` otherwise."""
        url = self.url
        headers = self.headers()
        ends = time.monotonic() + _seconds_left(self.params, self.context)
        while True:
            self.attempts += 1
            left = ends - time.monotonic()
            if left <= 0:
                raise HttpFailure("the call's time (deadline or timeout_s) "
                                  "ran out", code="MODEL_TIMEOUT")
            try:
                answer = self.post(url, self.request_bytes, headers=headers, timeout=left)
            except HttpFailure as exc:
                if exc.code not in _RETRIED or self.attempts >= MAX_HTTP_ATTEMPTS:
                    raise
                self._wait(None, ends, exc.code, exc.msg)
                continue
            if 200 <= answer.status < 300:
                return answer.body
            if (self.format == "json_schema" and self.params.schema_ is not None
                    and (answer.status in (400, 422) or b"response_format" in answer.body)):
                # A server that takes the schema only as json_object (llama-cpp-python's
                # answers 500 naming response_format): ask again in that form, and in
                # that form from now on.
                _OBJECT_FORMAT.add(url)
                self.encode("json_object")
                continue
            if answer.status == 429:
                code = "MODEL_RATE_LIMITED"
            elif answer.status >= 500:
                code = "MODEL_UNREACHABLE"
            else:
                code = "MODEL_BAD_RESPONSE"
            msg = f"HTTP {answer.status} from the model server"
            if code == "MODEL_BAD_RESPONSE" or self.attempts >= MAX_HTTP_ATTEMPTS:
                raise HttpFailure(msg + (f" after {self.attempts} attempts"
                                         if code != "MODEL_BAD_RESPONSE" else ""), code=code)
            self._wait(answer.retry_after, ends, code, msg)

    def _wait(self, header: str | None, ends: float, code: str, msg: str) -> None:
        wait = retry_after(header, default=_BACKOFF_S * 2 ** (self.attempts - 1))
        if time.monotonic() + wait >= ends:
            raise HttpFailure(f"{msg}; the retry in {wait:g} s would pass the deadline",
                              code=code)
        self.context.beat()
        self.sleep(wait)


def _budget_left(context: ToolContext) -> int | None:
    budget = context.budget
    return None if budget is None else budget.tokens_left


def model_tool(sleep: Callable[[float], None] = time.sleep,
               post: Post = post_json) -> Tool[Params, Result]:
    """The ``model.chat`` tool. ``sleep`` waits between retries and ``post`` does the
    HTTP exchange (:func:`~claimfsm.skills.tools.model_http.post_json`); a benchmark or a
    test may inject its own."""

    def handler(params: Params, *, context: ToolContext) -> ToolResult[Result]:
        left = _budget_left(context)
        if left is not None and left <= 0:
            return ToolResult.error("model.chat: the session's token budget "
                                    "(max_tokens_total) is spent", "TOKEN_BUDGET_EXCEEDED")
        call = _Call(params, context, sleep, post)
        cache = context.resources.get("model_cache")
        limits = context.resources.get("model_limits")
        slot = f"{MODEL_TOOL}:{params.model}"
        body = cache.get(call.request) if cache is not None else None
        cached = body is not None
        try:
            if body is None:
                if limits is not None and not limits.take(slot, context.clock.now()):
                    raise HttpFailure(f"{slot}: rate limit reached", code="RATE_LIMITED")
                if limits is not None and not limits.acquire(slot):
                    raise HttpFailure(f"{slot}: concurrency limit reached",
                                      code="CONCURRENCY_LIMITED")
                try:
                    body = call.exchange()
                finally:
                    if limits is not None:
                        limits.release(slot)
            data, text, finish, usage = _parse(body)
        except HttpFailure as exc:
            return ToolResult(success=False, value=call.partial(), message=f"model.chat: "
                              f"{exc.msg}", code=exc.code)
        if cache is not None and not cached:
            cache.put(call.request, body)
        if context.budget is not None and not cached:
            context.budget.add_tokens(usage.total_tokens)
        answer = {"text": text, "finish_reason": finish, "usage": usage.model_dump(),
                  "model": str(data.get("model") or params.model)}
        result = call.partial(address(answer)).model_copy(update={
            **answer, "usage": usage, "content": _json_of(text), "cached": cached})
        return ToolResult.ok(result)

    return Tool(name=MODEL_TOOL, description="Ask an OpenAI-compatible chat model (Chat "
                "Completions) for a JSON answer following a schema.", params=Params,
                result=Result, handler=handler, telemetry=telemetry)


def telemetry(args: dict[str, Any], value: dict[str, Any] | None) -> dict[str, Any]:
    """What a ``ToolInvoked`` event of ``model.chat`` adds: the request (the body sent,
    key excluded) and the response (text, finish reason, usage, model) as blobs keyed by
    the sha256 of their canonical JSON, the usage and the latency."""
    value = value or {}
    out: dict[str, Any] = {"usage": value.get("usage"), "latency_ms": value.get("latency_ms")}
    blobs: dict[str, Any] = {}
    try:
        request = body_of(Params.model_validate(args), str(value.get("format")
                                                                  or "json_schema"))
    except ValueError:
        request = None
    if request is not None:
        out["request"] = address(request)
        blobs[out["request"]] = request
    if value.get("response"):
        answer = {k: value.get(k) for k in ("text", "finish_reason", "usage", "model")}
        out["response"] = address(answer)
        blobs[out["response"]] = answer
    out["blobs"] = blobs
    return out
