"""Wiring: a store, an evidence index and a driver over one SQLite file (or memory).

``Engine.open(path)`` is what the CLI uses: the session store and the evidence index share
the file (tables ``st_*`` and ``ev_*``). An empty index is seeded with the bundled demo
corpus, so ``claimfsm verify`` works out of the box.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fsm.driver import Driver, StepResult, ToolSession, ToolsFactory
from skills.context import Clock
from skills.tools.builtin import builtin_tools
from skills.tools.executor import Executor
from skills.tools.index import EvidenceIndex
from skills.tools.ingest import ingest_documents, ingest_facts
from skills.tools.policies import FetchBeforeExtractPolicy, ToolPolicy
from skills.tools.registry import ToolRegistry
from state.memory import MemoryStore
from state.model import SessionState
from state.sqlite import SQLiteStore
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
) -> ToolsFactory:
    """A per-step executor whose policy state comes from (and goes back to) the session."""
    pols = default_policies() if policies is None else policies

    def make(state: SessionState, clock: Clock) -> ToolSession:
        return Executor(registry, clock=clock, session_id=state.sid, policies=pols,
                        policy_state=state.policy, fallbacks=fallbacks)

    return make


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
    ) -> Engine:
        """Open (or create) ``db``; ``None`` keeps everything in memory."""
        if db is None:
            store: StateStore = MemoryStore()
            index = EvidenceIndex.open(":memory:")
        else:
            store = SQLiteStore(str(db), durability=durability)
            index = EvidenceIndex.open(db)
        if seed and index.count_documents() == 0:
            seed_demo(index)
        factory = tools or executor_factory(ToolRegistry(builtin_tools(index)))
        driver = Driver(store, tools=factory, clock=clock, on_step=on_step)
        return cls(store=store, index=index, driver=driver)

    def close(self) -> None:
        """Close the store and the index."""
        self.store.close()
        self.index.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
