"""The one hook the tool runtime offers to whoever watches a step (traces, metrics).

The driver's observer sets :data:`TOOL_HOOK` around a step; the executor reads it once per
tool call and, when it is set, reports the call there. It lives at the bottom layer
because the tool runtime (``claimfsm.skills``) may import nothing above it. Unset (the
default), a tool call pays one context-variable read.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["TOOL_HOOK", "ToolHook"]


class ToolHook(Protocol):
    """Called after each tool call attempt with its ``ToolInvoked`` event (tool, ok, code,
    attempt, ...) and its wall-clock duration in seconds."""

    def __call__(self, event: dict[str, Any], seconds: float) -> None: ...


#: The hook of the step running in this context, or ``None`` (nobody is watching).
TOOL_HOOK: ContextVar[ToolHook | None] = ContextVar("claimfsm_tool_hook", default=None)
