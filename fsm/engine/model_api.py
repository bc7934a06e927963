"""Model-backed skills of your own, through the public API.

A custom skill asks a model with :func:`ask_model` (the Output model is the schema sent,
the answer is validated and repaired, a failure comes back as a
:class:`~claimfsm.skills.model_call.ModelFailure` with a stable code), and its machine's
driver gets the ``model.chat`` tool from :func:`model_tools`::

    class Topic(BaseModel):
        topic: str

    @skill()
    def classify(inp, ctx):
        got = ask_model(ctx, ModelUse(**inp.config["model"]),
                        [{"role": "user", "content": inp.claim}], Topic)
        if isinstance(got, ModelFailure):
            return inp.error(got.code, got.msg)
        return inp.ok("DONE", topic=got.topic)

    wf = define_machine("topics", states={"CLASSIFY": classify, "DONE": None},
                        transitions=[("CLASSIFY", "DONE")])
    driver = wf.driver(store, tools=model_tools())
    driver.start(text, config={"model": {"url": URL, "model": "gpt-4o-mini",
                                         "api_key_env": "OPENAI_API_KEY"}})

Every call is recorded like any tool call, so the session replays offline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimfsm.engine.runtime import executor_factory
from claimfsm.engine.step import ToolsFactory
from claimfsm.skills.model_call import ask
from claimfsm.skills.tools.core import Tool
from claimfsm.skills.tools.limits import RateLimit
from claimfsm.skills.tools.model_chat import model_tool
from claimfsm.skills.tools.registry import ToolRegistry

__all__ = ["ask_model", "model_tools"]

ask_model = ask
"""A structured model call from a skill (:func:`claimfsm.skills.model_call.ask`)."""


def model_tools(
    *extra: Tool[Any, Any], resources: Mapping[str, Any] | None = None,
    rate_limits: Mapping[str, RateLimit] | None = None,
    concurrency: Mapping[str, int] | None = None,
) -> ToolsFactory:
    """A driver's tools: ``model.chat`` and ``extra``, under the runtime's rules (the
    session's deadline and budgets from its config; per-model limits keyed
    ``model.chat:<model>``; ``resources`` may hold a ``model_cache``)."""
    registry = ToolRegistry((model_tool(), *extra))
    return executor_factory(registry, policies=(), fallbacks={}, rate_limits=rate_limits,
                            concurrency=concurrency, resources=resources)
