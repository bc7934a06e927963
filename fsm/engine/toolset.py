"""The tools :meth:`Engine.open <claimfsm.engine.runtime.Engine.open>` gives its driver:
the built-in tools (routed to HTTP backends for the configured sources), the model tool,
the user's tools bound to states, and the default runtime a step's first tool call loads.

Its own module because it is the one part of opening an engine that knows the tool
runtime: :mod:`claimfsm.engine.runtime` wires a store, an index and a driver and asks this
for the tools, whose modules (registry, executor, HTTP backends) load only when used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding, make_bindings
from claimfsm.engine.lazy_tools import (
    DEFAULT_FALLBACKS,
    LazyTools,
    build_executor,
    default_policies,
    executor_factory,
    retrieval_mode,
)
from claimfsm.engine.limits import SessionLimits
from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.skills.tools.core import ToolDefinitionError

if TYPE_CHECKING:
    from claimfsm.engine.config import EngineConfig
    from claimfsm.engine.step import ToolSession, ToolsFactory
    from claimfsm.skills.context import Clock
    from claimfsm.skills.tools.index import EvidenceIndex

    # The tool runtime loads when a step first calls a tool (claimfsm.engine.lazy_tools).
    from claimfsm.skills.tools.policies import ToolPolicy
    from claimfsm.skills.tools.registry import ToolRegistry
    from claimfsm.state.model import SessionState

__all__ = ["bound_bindings", "default_runtime", "registered_tools"]


def default_runtime(index: EvidenceIndex, cfg: EngineConfig,
                    resources: Mapping[str, Any] | None) -> LazyTools:
    """The default tool runtime (the built-in tools, the default policies and
    fallbacks), loaded by the first step that uses a tool: nothing of it is the
    caller's, so there is nothing to check when the engine opens (the built-in tools'
    examples are checked by the test suite)."""
    built: list[tuple[ToolRegistry, tuple[ToolPolicy, ...]]] = []

    def build(state: SessionState, clock: Clock, kwargs: dict[str, Any]) -> ToolSession:
        if not built:
            from claimfsm.skills.tools.registry import ToolRegistry

            builtin = (*_tools_of(index, cfg), _model_tool())
            built.append((ToolRegistry(builtin, checked=builtin), default_policies()))
        registry, policies = built[0]
        return build_executor(registry, state, clock, kwargs, policies, DEFAULT_FALLBACKS,
                         resources, retrieval_mode(state))

    return LazyTools(SessionLimits.build(cfg.rate_limits, cfg.concurrency), build)


def registered_tools(index: EvidenceIndex, cfg: EngineConfig, user: ToolRegistry,
                     resources: Mapping[str, Any] | None) -> ToolsFactory:
    """The tools of an engine given any of its own: the built-in tools and ``user``'s
    (the config's extra tools, already checked) in one registry, every tool ``cfg.bind``
    names registered, and ``cfg.tools`` if given, else an executor over that registry."""
    from claimfsm.skills.tools.registry import ToolRegistry

    builtin = (*_tools_of(index, cfg), _model_tool())  # examples checked by tests
    registry = ToolRegistry((*builtin, *user), checked=builtin)
    for state, names in (cfg.bind or {}).items():
        for name in names:
            if name not in registry:
                raise ToolDefinitionError(name,
                                          f"bound to {state} but not registered")
    return cfg.tools or executor_factory(
        registry, policies=cfg.policies, rate_limits=cfg.rate_limits,
        concurrency=cfg.concurrency, resources=resources)


def bound_bindings(bind: Mapping[str, Sequence[str]]) -> Mapping[str, Binding]:
    """The default bindings with ``bind``'s tools (keyed by state) given to their skills."""
    if not bind:
        return DEFAULT_BINDINGS
    by_skill: dict[str, list[str]] = {}
    for state, names in bind.items():
        try:
            skill = DEFAULT_MACHINE.state(state).skill
        except KeyError:
            skill = None
        if skill is None:
            known = ", ".join(s.name for s in DEFAULT_MACHINE.states if s.skill)
            raise ToolDefinitionError(
                ", ".join(names) or "-", f"cannot bind to state {state!r} (states: {known})"
            )
        by_skill.setdefault(skill, []).extend(names)
    return make_bindings(by_skill)


def _model_tool() -> Any:
    from claimfsm.skills.tools.model_chat import model_tool

    return model_tool()


def _tools_of(index: EvidenceIndex, cfg: EngineConfig) -> tuple[Any, ...]:
    """The built-in tools, with the configured sources routed to their HTTP backends."""
    if not cfg.sources:
        from claimfsm.skills.tools.builtin import builtin_tools

        return builtin_tools(index)
    from claimfsm.skills.tools.http.route import backends_of, routed_tools  # only when used

    return routed_tools(index, backends_of(cfg.sources))
