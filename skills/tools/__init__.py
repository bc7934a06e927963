"""The tool runtime: typed tools, a validated registry, policies, limits and the executor.

Import the evidence tools (index, built-in tools, sentence extraction, ingest) from their
own modules; this package re-exports only the runtime so that those modules can import it
without a cycle. It exports lazily (each name loads its module on first use): importing
any ``claimfsm.skills.tools.X`` no longer loads the executor, the registry and the
policies, which a ``claimfsm step`` that calls no tool never uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claimfsm._base.lazy import lazy_exports

if TYPE_CHECKING:
    from claimfsm.skills.tools.core import (
        BudgetTracker,
        DeadlineExceeded,
        ParameterError,
        QueryTypeUnsupported,
        Tool,
        ToolContext,
        ToolDefinitionError,
        ToolError,
        ToolExample,
        ToolResult,
    )
    from claimfsm.skills.tools.executor import Executor
    from claimfsm.skills.tools.limits import RateLimit, ToolLimits
    from claimfsm.skills.tools.policies import (
        FetchBeforeExtractPolicy,
        PolicyDecision,
        SequentialDependencyPolicy,
        ToolPolicy,
    )
    from claimfsm.skills.tools.registry import ToolRegistry

__all__ = [
    "BudgetTracker",
    "DeadlineExceeded",
    "Executor",
    "FetchBeforeExtractPolicy",
    "ParameterError",
    "PolicyDecision",
    "QueryTypeUnsupported",
    "RateLimit",
    "SequentialDependencyPolicy",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolExample",
    "ToolLimits",
    "ToolPolicy",
    "ToolRegistry",
    "ToolResult",
]

__getattr__ = lazy_exports(__name__, {
    "BudgetTracker": "claimfsm.skills.tools.core",
    "DeadlineExceeded": "claimfsm.skills.tools.core",
    "ParameterError": "claimfsm.skills.tools.core",
    "QueryTypeUnsupported": "claimfsm.skills.tools.core",
    "Tool": "claimfsm.skills.tools.core",
    "ToolContext": "claimfsm.skills.tools.core",
    "ToolDefinitionError": "claimfsm.skills.tools.core",
    "ToolError": "claimfsm.skills.tools.core",
    "ToolExample": "claimfsm.skills.tools.core",
    "ToolResult": "claimfsm.skills.tools.core",
    "Executor": "claimfsm.skills.tools.executor",
    "RateLimit": "claimfsm.skills.tools.limits",
    "ToolLimits": "claimfsm.skills.tools.limits",
    "FetchBeforeExtractPolicy": "claimfsm.skills.tools.policies",
    "PolicyDecision": "claimfsm.skills.tools.policies",
    "SequentialDependencyPolicy": "claimfsm.skills.tools.policies",
    "ToolPolicy": "claimfsm.skills.tools.policies",
    "ToolRegistry": "claimfsm.skills.tools.registry",
})
