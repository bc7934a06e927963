"""The ``model.chat`` tool's types: its params and result, and the request body it sends.

Kept apart from the tool (``claimfsm.skills.tools.model_chat``) so that what is sent and
what is recorded are defined in one place: the body here is what the server gets and
what the request blob of a ``ToolInvoked`` event holds.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Message", "Params", "Result", "Usage", "address", "body_of", "digest"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Message(_Strict):
    """One chat message."""

    role: Literal["system", "user", "assistant"]
    content: str = Field(max_length=200_000)


class Params(_Strict):
    """What a skill asks: where, which model, the messages, the answer's JSON schema."""

    url: str = Field(min_length=1, max_length=2000)
    model: str = Field(min_length=1, max_length=200)
    api_key_env: str | None = Field(None, max_length=200)
    messages: list[Message] = Field(min_length=1, max_length=64)
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    schema_name: str = Field("output", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    max_tokens: int = Field(512, ge=1, le=100_000)
    temperature: float = Field(0.0, ge=0, le=2)
    seed: int | None = 0
    timeout_s: float = Field(60.0, gt=0, le=3600)


class Usage(_Strict):
    """Tokens the call used, as the server counted them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class Result(_Strict):
    """The answer: the message text and its JSON (``None`` when it is not JSON), or, for a
    failed call, what is known of it (digests, attempts, latency)."""

    text: str = ""
    content: Any = None
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    request: str = ""
    response: str = ""
    latency_ms: float = 0.0
    attempts: int = 0
    cached: bool = False
    format: str = "json_schema"


def digest(data: bytes) -> str:
    """The content address of a blob."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def body_of(params: Params, fmt: str = "json_schema") -> dict[str, Any]:
    """The request body sent for ``params``: the schema as ``response_format`` in the
    OpenAI form (``json_schema``) or, for servers that only take that, ``json_object``
    with the schema beside it (llama-cpp-python's server)."""
    body: dict[str, Any] = {
        "model": params.model,
        "messages": [m.model_dump() for m in params.messages],
        "max_tokens": params.max_tokens,
        "temperature": params.temperature,
    }
    if params.seed is not None:
        body["seed"] = params.seed
    if params.schema_ is not None and fmt == "json_object":
        body["response_format"] = {"type": "json_object", "schema": params.schema_}
    elif params.schema_ is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": params.schema_name, "schema": params.schema_, "strict": True}}
    return body


def address(blob: Any) -> str:
    """The content address of a JSON blob: the digest of its canonical form."""
    return digest(orjson.dumps(blob, option=orjson.OPT_SORT_KEYS))
