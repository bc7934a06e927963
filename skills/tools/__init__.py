"""The tool runtime: typed tools, a validated registry, policies, limits and the executor.

Import the evidence tools (index, built-in tools, sentence extraction, ingest) from their
own modules; this package re-exports only the runtime so that those modules can import it
without a cycle.
"""

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
