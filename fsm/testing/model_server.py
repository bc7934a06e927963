"""A scripted OpenAI-compatible server for offline tests of model-backed skills.

:class:`ScriptedModelServer` listens on 127.0.0.1 (a free port) and answers
``POST .../chat/completions`` with whatever its ``answer`` function returns for the
request's JSON body: a dict (sent as the message content, as JSON), a string (sent as
is), or a full :class:`Reply` (status, headers, raw body) to script faults. The default
answer, :func:`schema_answer`, fills the request's JSON schema with the first value each
part allows (the first ``enum`` member, the minimum count of items), which is what a
grammar-constrained model would give at its most boring: it is valid, deterministic and
costs nothing. Every request is kept in ``requests`` (with its headers) for assertions.

```python
with ScriptedModelServer() as server:
    engine = Engine.open(None, config=EngineConfig(profile=Profile(
        planner="model", model_url=server.url, model="scripted")))
```
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

__all__ = ["Reply", "ScriptedModelServer", "completion", "schema_answer", "scripted_post"]


@dataclass(frozen=True)
class Reply:
    """A raw answer: status, headers and body, sent as they are."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def completion(content: str, *, model: str = "scripted", prompt_tokens: int = 10,
               completion_tokens: int | None = None) -> bytes:
    """A Chat Completions answer body whose message is ``content``."""
    used = len(content) // 4 + 1 if completion_tokens is None else completion_tokens
    return orjson.dumps({
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": used,
                  "total_tokens": prompt_tokens + used},
    })


def _fill(schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    if "$ref" in schema:
        return _fill(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return _fill(schema[key][0], defs)
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: _fill(sub, defs) for name, sub in props.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems", 1)))
        items = schema.get("items", {})
        if "enum" in items:  # distinct members where there are enough (ids, say)
            return [items["enum"][i % len(items["enum"])] for i in range(count)]
        return [_fill(items, defs) for _ in range(count)]
    if kind == "string":
        return "scripted answer"[: int(schema.get("maxLength", 15))] or "x"
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0.5 if schema.get("maximum") == 1 else 0))
    if kind == "boolean":
        return False
    return None


def schema_answer(request: dict[str, Any]) -> Any:
    """The first valid value of the request's JSON schema (``None`` without a schema)."""
    fmt = request.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        return None
    return _fill(schema, schema.get("$defs", {}))


Answer = Callable[[dict[str, Any]], "dict[str, Any] | list[Any] | str | Reply | None"]


def _reply(answer: Answer, request: dict[str, Any]) -> Reply:
    reply = answer(request)
    if isinstance(reply, Reply):
        return reply
    text = reply if isinstance(reply, str) else orjson.dumps(reply).decode()
    return Reply(body=completion(text, model=str(request.get("model", ""))),
                 headers={"Content-Type": "application/json"})


def scripted_post(answer: Answer | None = None) -> Callable[..., Any]:
    """``answer`` as the ``post`` of ``claimfsm.skills.tools.model_chat.model_tool``: the
    same answers as :class:`ScriptedModelServer`, with no socket at all (recorded
    fixtures, and the benchmark of the engine's own cost per model call)."""
    from claimfsm.skills.tools.model_http import HttpAnswer

    chosen = answer or schema_answer

    def post(url: str, body: bytes, *, headers: Any, timeout: float) -> HttpAnswer:
        reply = _reply(chosen, orjson.loads(body))
        return HttpAnswer(status=reply.status,
                          content_type=reply.headers.get("Content-Type", ""),
                          retry_after=reply.headers.get("Retry-After"), body=reply.body)

    return post


class ScriptedModelServer:
    """A Chat Completions server on 127.0.0.1 answering with ``answer(request)``."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.answer: Answer = answer or schema_answer
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                request = orjson.loads(self.rfile.read(size) or b"{}")
                owner.requests.append(request)
                owner.headers.append(dict(self.headers))
                reply = _reply(owner.answer, request)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if "Content-Length" not in reply.headers:
                    self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give as ``model_url`` (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> ScriptedModelServer:
        """Start serving (in a daemon thread). A server that refused ``json_schema`` earlier
        in this process may have had this port: the model tool forgets that refusal."""
        from claimfsm.skills.tools.model_chat import forget_format

        forget_format(self.url)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
