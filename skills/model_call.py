"""Asking a model for a skill's output: the prompt files, the schema, validation, repair.

A model-backed skill builds messages, names its Output model and a check of its own
rules, and calls :func:`ask`. The Output model becomes the JSON schema sent as
``response_format``; an answer that does not validate, or breaks the skill's rules, is
sent back with the problem for up to :data:`REPAIRS` more attempts, then the skill gets a
:class:`ModelFailure` (``MODEL_BAD_OUTPUT``, or the tool's code when the call itself
failed). Every attempt is a ``model.chat`` call through the skill's tool caller, so the
driver records it and a replay answers it from the record.

The prompts are package files (``skills/prompts/<name>.v<N>.md``); a session stores the
digest of each one it uses (:func:`prompt_digests`, also what a machine's version
includes).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, Field, ValidationError

from claimfsm._base.record import Record
from claimfsm.skills.base import BaseIO, describe_validation_error
from claimfsm.skills.context import SkillContext

__all__ = [
    "PROMPTS",
    "REPAIRS",
    "ModelFailure",
    "ModelUse",
    "ask",
    "output_schema",
    "prompt",
    "prompt_digests",
]

REPAIRS = 2
"""Repair attempts after a first answer that breaks the schema or the skill's rules."""

#: Prompt name -> file (the version is in the name: a changed prompt is a new file).
PROMPTS: Mapping[str, str] = {"planner": "planner.v1.md", "judge": "judge.v1.md"}
_DIR = Path(__file__).parent / "prompts"
_CARDS = Path(__file__).parent / "cards"
#: Cards appended to a prompt: the planner's prompt is the Evidence Query Planner card.
_CARD_OF: Mapping[str, str] = {"planner": "evidence_query_plan.md"}

M = TypeVar("M", bound=BaseModel)


class ModelUse(BaseIO):
    """Which model a skill asks and how (what the profile set; never the key itself)."""

    url: str = Field(min_length=1, max_length=2000)
    model: str = Field(min_length=1, max_length=200)
    api_key_env: str | None = Field(None, max_length=200)
    on_error: Literal["fallback", "fail"] = "fallback"
    prompt: str | None = None
    """The digest of the prompt the session stored when it started (echoed in the step's
    ``d.model``). A prompt file changed since then changes the request, so a replay in
    ``tools`` mode reports the call as unrecorded rather than answering it."""


@functools.cache
def prompt(name: str) -> str:
    """The text of prompt ``name`` (its card appended when it has one)."""
    text = (_DIR / PROMPTS[name]).read_text(encoding="utf-8")
    card = _CARD_OF.get(name)
    if card is not None:
        text += "\n" + (_CARDS / card).read_text(encoding="utf-8")
    return text


def prompt_digests() -> dict[str, str]:
    """``{name: "sha256:..."}`` of every prompt the package ships (cards included)."""
    return {name: "sha256:" + hashlib.sha256(prompt(name).encode()).hexdigest()
            for name in PROMPTS}


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    return orjson.loads(orjson.dumps(schema))  # type: ignore[no-any-return]


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of ``model`` as sent in ``response_format`` (a fresh copy)."""
    return orjson.loads(orjson.dumps(_schema(model)))  # type: ignore[no-any-return]


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class ModelFailure(Record, frozen=True):
    """Why no valid answer came: a stable code and a message (never the key)."""

    code: str
    msg: str
    calls: int

    def __init__(self, code: str, msg: str, calls: int) -> None:
        self._fill(code=code, msg=msg, calls=calls)


def ask(
    ctx: SkillContext, use: ModelUse, messages: list[dict[str, str]], output: type[M], *,
    check: Callable[[M], str | None] | None = None, schema: dict[str, Any] | None = None,
    max_tokens: int = 512,
) -> M | ModelFailure:
    """The model's answer as ``output``, checked by ``check`` (a problem, or ``None``).

    ``schema`` overrides the schema made from ``output`` (a skill may narrow it, e.g. to
    the ids it may cite). The first answer and up to :data:`REPAIRS` repairs.
    """
    if ctx.tools is None:
        return ModelFailure(code="MODEL_UNREACHABLE", msg="no tool runtime: model.chat cannot "
                            "run", calls=0)
    chat = list(messages)
    sent = output_schema(output) if schema is None else schema
    problem = ""
    for attempt in range(1 + REPAIRS):
        args: dict[str, Any] = {"url": use.url, "model": use.model, "messages": chat,
                                "schema": sent, "schema_name": output.__name__.lower()[:64],
                                "max_tokens": max_tokens, "temperature": 0.0, "seed": 0}
        if use.api_key_env:
            args["api_key_env"] = use.api_key_env
        call = ctx.tools.call("model.chat", args)
        if not call.ok:
            return ModelFailure(code=call.code or "MODEL_UNREACHABLE", msg=call.message,
                                calls=attempt + 1)
        value = call.value or {}
        text = str(value.get("text", ""))
        try:
            answer = output.model_validate_json(text)
        except ValidationError as exc:
            problem = describe_validation_error(exc)
        else:
            problem = (check(answer) if check is not None else None) or ""
            if not problem:
                return answer
        chat = [*chat, {"role": "assistant", "content": text[:4000]},
                {"role": "user", "content": f"That answer is not valid: {problem}. Answer "
                 "again with one JSON object that follows the schema and the rules."}]
    return ModelFailure(code="MODEL_BAD_OUTPUT", msg=f"after {1 + REPAIRS} answers: {problem}",
                        calls=1 + REPAIRS)
