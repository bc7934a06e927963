"""Wiring: a store, an evidence index and a driver over one SQLite file, a PostgreSQL
URL, or memory.

``Engine.open(path)`` is what the CLI uses: the session store and the evidence index share
the file (tables ``st_*`` and ``ev_*``). For a ``postgresql://`` URL the sessions live in
the server and the index in the SQLite file of the URL's ``index`` parameter (in memory
when there is none; see :func:`state.open.locate`). An empty index is seeded with the
bundled demo corpus, so ``claimfsm verify`` works out of the box.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fsm.bindings import DEFAULT_BINDINGS, Binding, make_bindings
from fsm.driver import Driver, StepResult, ToolSession, ToolsFactory
from fsm.limits import SessionLimits
from fsm.machine import DEFAULT_MACHINE
from skills.context import Clock
from skills.tools.builtin import builtin_tools
from skills.tools.core import Tool, ToolDefinitionError
from skills.tools.executor import Executor
from skills.tools.index import EvidenceIndex
from skills.tools.ingest import ingest_documents, ingest_facts
from skills.tools.limits import RateLimit
from skills.tools.policies import FetchBeforeExtractPolicy, ToolPolicy
from skills.tools.registry import ToolRegistry
from state.memory import MemoryStore
from state.model import SessionState
from state.open import locate, open_store
from state.store import StateStore

__all__ = ["DEMO_DOCS", "DEMO_KB", "FIXTURES", "Engine", "executor_factory", "seed_demo"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DEMO_DOCS = FIXTURES / "corpus" / "demo_docs.jsonl"
DEMO_KB = FIXTURES / "corpus" / "demo_kb.jsonl"

#: A rate-limited ``search`` is reissued as ``web_search`` (seed 000, step 3).
DEFAULT_FALLBACKS: Mapping[str, str] = {"search": "web_search"}


def default_policies() -> tuple[ToolPolicy, ...]:
    """Fail-closed policies every session runs with."""
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
    tool-call budget and the rate buckets (``fsm.limits``), all saved back after the
    step. ``rate_limits`` are defaults a session's ``config.rate_limits`` overrides;
    ``concurrency`` slots are shared by every session this factory serves. ``resources``
    are named objects handed to tools (``context.resource(name)``); one with
    ``snapshot()``/``restore(snap)`` is restored when a call fails."""
    pols = default_policies() if policies is None else policies
    limits = SessionLimits.build(rate_limits, concurrency)

    def make(state: SessionState, clock: Clock) -> ToolSession:
        return Executor(registry, clock=clock, session_id=state.sid, policies=pols,
                        policy_state=state.policy, fallbacks=fallbacks, resources=resources,
                        **limits.executor_kwargs(state))

    return make


def _bindings(bind: Mapping[str, Sequence[str]]) -> Mapping[str, Binding]:
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


def seed_demo(index: EvidenceIndex) -> int:
    """Load the bundled demo corpus and knowledge base; returns documents added."""
    report = ingest_documents(index, DEMO_DOCS, source=None)
    ingest_facts(index, DEMO_KB)
    return report.added


@dataclass
class Engine:
    """A store, an evidence index and the driver that joins them."""

    store: StateStore
    index: EvidenceIndex
    driver: Driver

    @classmethod
    def open(
        cls,
        db: str | Path | None,
        *,
        clock: Clock | None = None,
        durability: Literal["full", "normal", "group"] = "normal",
        seed: bool = True,
        on_step: Callable[[StepResult], None] | None = None,
        tools: ToolsFactory | None = None,
        extra_tools: Sequence[Tool[Any, Any]] = (),
        bind: Mapping[str, Sequence[str]] | None = None,
        rate_limits: Mapping[str, RateLimit] | None = None,
        concurrency: Mapping[str, int] | None = None,
        policies: tuple[ToolPolicy, ...] | None = None,
        resources: Mapping[str, Any] | None = None,
    ) -> Engine:
        """Open (or create) ``db`` (a SQLite file or a ``postgresql://`` URL); ``None``
        keeps everything in memory.

        ``extra_tools`` are registered next to the built-in ones (a duplicate name is a
        ``ToolDefinitionError``); ``bind`` maps a state to tools its skill calls, e.g.
        ``{"RETRIEVAL": ["my_tool"]}`` (one request per planned query). ``rate_limits``,
        ``concurrency``, ``policies`` (default: fetch-before-extract) and ``resources``
        configure the tool runtime (see :func:`executor_factory`); ``tools`` replaces it.
        """
        bindings = _bindings(bind or {})
        registry = ToolRegistry(extra_tools)  # validate user tools before opening files
        if db is None:
            store: StateStore = MemoryStore()
            index = EvidenceIndex.open(":memory:")
        else:
            where = locate(db)
            store = open_store(db, durability=durability)
            try:
                index = EvidenceIndex.open(where.index or ":memory:")
            except BaseException:
                store.close()
                raise
        try:
            if seed and index.count_documents() == 0:
                seed_demo(index)
            registry = ToolRegistry((*builtin_tools(index), *registry))
            for state, names in (bind or {}).items():
                for name in names:
                    if name not in registry:
                        raise ToolDefinitionError(name, f"bound to {state} but not registered")
            factory = tools or executor_factory(registry, policies=policies,
                                                rate_limits=rate_limits,
                                                concurrency=concurrency, resources=resources)
            driver = Driver(store, tools=factory, clock=clock, on_step=on_step,
                            bindings=bindings)
        except BaseException:
            store.close()
            index.close()
            raise
        return cls(store=store, index=index, driver=driver)

    def close(self) -> None:
        """Close the store and the index."""
        self.store.close()
        self.index.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
