"""How a step gets its executor: :func:`executor_factory` builds one per step from a
registry, and :class:`LazyTools` (the engine's default) builds it on the step's first
tool call.

Most steps call no tool (PARSE_CLAIM, AGGREGATE, a RETRIEVAL step that only plans...),
yet each one imported the executor, the registry, the policies, the built-in tools and
``model.chat`` and built an executor, only for the driver to read back that nothing was
called. With the engine's default tool configuration (nothing of the tool runtime given
to :class:`~claimfsm.engine.config.EngineConfig`: nothing to check when it opens),
``Engine.open`` gives the driver :class:`LazyTools`, whose per-step
:class:`LazySession` builds the real executor on its first call, or on the first use
of anything else of it (``registry``, ``gather``...). The session's limits are loaded
when the step begins, as before (a malformed stored config still fails there), and are
the ones the executor gets. A step that used no tool reports what an untouched executor
reports: no calls, no events, a copy of the session's policy state, its budget and rate
buckets as loaded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from claimfsm.engine.limits import SessionLimits
from claimfsm.engine.settings import SessionSettings
from claimfsm.skills.context import Clock, ToolCall
from claimfsm.skills.tools.policies import copy_state

if TYPE_CHECKING:
    from claimfsm.engine.step import ToolSession, ToolsFactory

    # The executor, the registry and the built-in tools load when a step first uses them.
    from claimfsm.skills.tools.limits import RateLimit
    from claimfsm.skills.tools.policies import ToolPolicy
    from claimfsm.skills.tools.registry import ToolRegistry
    from claimfsm.state.model import SessionState

__all__ = ["DEFAULT_FALLBACKS", "LazySession", "LazyTools", "build_executor",
           "default_policies", "executor_factory", "retrieval_mode"]

#: A rate-limited ``search`` is reissued as ``web_search`` (seed 000, step 3).
DEFAULT_FALLBACKS: Mapping[str, str] = {"search": "web_search"}


def default_policies() -> tuple[ToolPolicy, ...]:
    """Fail-closed policies every session runs with."""
    from claimfsm.skills.tools.policies import FetchBeforeExtractPolicy

    return (FetchBeforeExtractPolicy(),)


def executor_factory(
    registry: ToolRegistry,
    *,
    policies: tuple[ToolPolicy, ...] | None = None,
    fallbacks: Mapping[str, str] = DEFAULT_FALLBACKS,
    rate_limits: Mapping[str, RateLimit] | None = None,
    concurrency: Mapping[str, int] | None = None,
    resources: Mapping[str, Any] | None = None,
) -> ToolsFactory:
    """A per-step executor loaded from the session: policy state, the deadline, the
    tool-call budget and the rate buckets (``claimfsm.engine.limits``), all saved back after the
    step. ``rate_limits`` are defaults a session's ``config.rate_limits`` overrides;
    ``concurrency`` slots are shared by every session this factory serves. ``resources``
    are named objects handed to tools (``context.resource(name)``); one with
    ``snapshot()``/``restore(snap)`` is restored when a call fails."""
    pols = default_policies() if policies is None else policies
    limits = SessionLimits.build(rate_limits, concurrency)

    def make(state: SessionState, clock: Clock) -> ToolSession:
        mode = retrieval_mode(state)  # checked first, as it always was
        return build_executor(registry, state, clock, limits.executor_kwargs(state), pols,
                         fallbacks, resources, mode)

    return make


def build_executor(registry: ToolRegistry, state: SessionState, clock: Clock,
              kwargs: dict[str, Any], policies: tuple[ToolPolicy, ...],
              fallbacks: Mapping[str, str], resources: Mapping[str, Any] | None,
              mode: str | None) -> ToolSession:
    """One step's executor, its limits (``kwargs``) loaded from the session."""
    from claimfsm.skills.tools.builtin import RETRIEVAL_RESOURCE
    from claimfsm.skills.tools.executor import Executor

    # the session's retrieval mode, for the search tools
    res = resources if mode is None else {**(resources or {}), RETRIEVAL_RESOURCE: mode}
    # model.chat applies its per-model limits (keys "model.chat:<model>") itself.
    res = {**(res or {}), "model_limits": kwargs["limits"]}
    return Executor(registry, clock=clock, session_id=state.sid, policies=policies,
                    policy_state=state.policy, fallbacks=fallbacks, resources=res, **kwargs)


def retrieval_mode(state: SessionState) -> str | None:
    """The session's retrieval mode, from its stored profile (``None``: a session from
    before profiles)."""
    return SessionSettings.of(state.config).retrieval

#: Builds the executor of one step from its state, clock and loaded limits.
Build = Callable[["SessionState", Clock, dict[str, Any]], "ToolSession"]


class LazySession:
    """One step's tool session; the executor is built when first needed."""

    def __init__(self, build: Callable[[], ToolSession], policy: Mapping[str, Any],
                 limits: dict[str, Any]) -> None:
        self._build = build
        self._real: ToolSession | None = None
        self._policy = policy
        self._limits = limits
        self._lock = threading.Lock()

    def executor(self) -> ToolSession:
        """The step's executor (built now if it was not yet; once, whichever thread asks)."""
        if self._real is None:
            with self._lock:
                if self._real is None:
                    self._real = self._build()
        return self._real

    @property
    def built(self) -> bool:
        """Whether the step used the executor."""
        return self._real is not None

    def call(self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
             key: str | None = None) -> ToolCall:
        """The executor's :meth:`~claimfsm.skills.tools.executor.Executor.call`."""
        return self.executor().call(tool, args, call_id=call_id, key=key)

    @property
    def calls(self) -> list[ToolCall]:
        """The calls made (none while the executor was never needed)."""
        return [] if self._real is None else self._real.calls

    @property
    def events(self) -> list[dict[str, Any]]:
        """The calls' events."""
        return [] if self._real is None else self._real.events

    @property
    def policy_state(self) -> dict[str, Any]:
        """The policy state after the step (an untouched executor's: a copy of the
        session's)."""
        if self._real is None:
            return copy_state(dict(self._policy or {}))
        return self._real.policy_state

    def runtime_state(self) -> dict[str, Any]:
        """What :func:`~claimfsm.engine.limits.next_runtime` reads: the executor's, or
        the budget and buckets as this step loaded them."""
        if self._real is not None:
            spent = getattr(self._real, "runtime_state", None)  # the executor has it
            return cast(dict[str, Any], spent()) if callable(spent) else {}
        budget, limits = self._limits["budget"], self._limits["limits"]
        return {"policy": self.policy_state,
                "limits": limits.state() if limits is not None else {},
                "budget": budget.state() if budget is not None else {}}

    def __getattr__(self, name: str) -> Any:
        # Anything else a skill asks of its tools (the registry, gather, the deadline)
        # is the executor's.
        if name.startswith("__") or name in ("_build", "_real", "_policy", "_limits", "_lock"):
            raise AttributeError(name)
        return getattr(self.executor(), name)


class LazyTools:
    """A :data:`~claimfsm.engine.step.ToolsFactory` whose sessions are
    :class:`LazySession`\\ s: ``build`` makes a step's executor from its state, clock and
    the limits ``limits`` loaded for it."""

    def __init__(self, limits: SessionLimits, build: Build) -> None:
        self.limits = limits
        self._build = build

    def __call__(self, state: SessionState, clock: Clock) -> ToolSession:
        loaded = self.limits.executor_kwargs(state)  # a malformed config fails here, as before
        session = LazySession(lambda: self._build(state, clock, loaded), state.policy, loaded)
        return cast("ToolSession", session)
