"""How an engine opens and runs: one frozen value, given to ``Engine.open(db, config=...)``.

Everything :meth:`~claimfsm.engine.runtime.Engine.open` takes besides where the sessions
live (the ``db``) is a field of :class:`EngineConfig`, grouped by the part it configures:
the verification profile, the store and the evidence index, the tool runtime, and the
hooks into the driver. The engine interprets it in one place (``Engine.open``); callers
only build it, so a value keeps its type from the command line (or a program) to the
engine: the :class:`~claimfsm.engine.profile.Profile` given here is the object that
:meth:`~claimfsm.engine.runtime.Engine.start` writes into a new session's config.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from claimfsm.engine.profile import Profile
from claimfsm.engine.step import StepResult, ToolsFactory
from claimfsm.skills.context import Clock
from claimfsm.skills.embed import Embedder
from claimfsm.skills.tools.core import Tool
from claimfsm.skills.tools.http.config import SourceConfig
from claimfsm.skills.tools.limits import RateLimit
from claimfsm.skills.tools.policies import ToolPolicy

__all__ = ["Durability", "EngineConfig", "from_keywords"]

Durability = Literal["full", "normal", "group"]
"""SQLite durability (see ``claimfsm.state.open.open_store``)."""


class EngineConfig(BaseModel):
    """How :meth:`Engine.open <claimfsm.engine.runtime.Engine.open>` sets an engine up;
    the defaults are what ``Engine.open(db)`` does.

    Verification: ``profile`` (default: lexical retrieval, lexical judge) is checked when
    the engine opens and written into every session started with ``Engine.start``; a
    hybrid profile loads ``embedder`` (default: MiniLM from the semantic extra).

    Store and index: ``durability`` (SQLite only), ``create=False`` refuses a ``db`` that
    is not already a claimfsm store (``UNKNOWN_DB``), ``seed=False`` leaves an empty
    evidence index empty instead of loading the bundled demo corpus.

    Tool runtime: ``extra_tools`` are registered next to the built-in ones; ``bind`` maps
    a state to tools its skill calls (``{"RETRIEVAL": ["my_tool"]}``); ``rate_limits``,
    ``concurrency``, ``policies`` (default: fetch-before-extract) and ``resources``
    configure the executor (see :func:`~claimfsm.engine.runtime.executor_factory`);
    ``tools`` replaces that executor altogether; ``sources`` (``[sources.NAME]`` of
    claimfsm.toml, parsed by :func:`~claimfsm.skills.tools.http.config.parse_sources`)
    sends those sources' searches to HTTP backends.

    Driver: ``clock`` (default: the system clock), ``on_step``, called with every
    step's result.

    Frozen, and unknown keys are refused with the key named, so a misspelt option fails
    where it is written instead of being ignored.
    """

    # Tools, policies, clocks and embedders are the caller's own objects: checked with
    # isinstance (or callable) and kept as they are, never copied.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True,
                              arbitrary_types_allowed=True)

    # -- verification ------------------------------------------------------------------
    profile: Profile = Field(default_factory=Profile.default)
    embedder: Embedder | None = None
    # -- store and evidence index --------------------------------------------------------
    durability: Durability = "normal"
    create: bool = True
    seed: bool = True
    # -- tool runtime ----------------------------------------------------------------------
    extra_tools: tuple[Tool[Any, Any], ...] = ()
    bind: Mapping[str, tuple[str, ...]] | None = None
    rate_limits: Mapping[str, RateLimit] | None = None
    concurrency: Mapping[str, int] | None = None
    policies: tuple[ToolPolicy, ...] | None = None
    resources: Mapping[str, Any] | None = None
    tools: ToolsFactory | None = None
    sources: Mapping[str, SourceConfig] | None = None
    """``[sources.NAME]`` of claimfsm.toml: sources answered by HTTP backends."""
    # -- driver ------------------------------------------------------------------------------
    clock: Clock | None = None
    on_step: Callable[[StepResult], None] | None = None
    #: A session started on another version of the machine: refuse it
    #: (``VERSION_MISMATCH``) or continue it on this one (docs/versioning.md).
    on_version: Literal["refuse", "continue"] = "refuse"

    @classmethod
    def default(cls) -> EngineConfig:
        """``EngineConfig()``, built without compiling the validator (what ``Engine.open``
        uses when given no config: the defaults are valid by definition)."""
        return cls.model_construct()

    @classmethod
    def trusted(cls, **values: Any) -> EngineConfig:
        """A config of values already checked where they came from (the CLI's options,
        which click validated), built without compiling the validator: that costs a
        command a few milliseconds of start-up. An unknown key is still refused (a
        ``TypeError`` naming it)."""
        unknown = sorted(set(values) - set(cls.model_fields))
        if unknown:
            raise TypeError(f"EngineConfig: unknown option {unknown[0]!r}")
        return cls.model_construct(**values)


def from_keywords(config: EngineConfig | None, options: Mapping[str, Any]) -> EngineConfig:
    """The config the old keyword form of ``Engine.open`` names (deprecated; validated
    like any config): ``Engine.open(db, clock=..., profile=...)``."""
    import warnings

    if config is not None:
        raise TypeError("Engine.open: pass the options in config=EngineConfig(...), "
                        "not as keywords beside it")
    unknown = sorted(set(options) - set(EngineConfig.model_fields))
    if unknown:
        raise TypeError(f"Engine.open() got an unexpected keyword argument {unknown[0]!r}")
    # stacklevel 3: the warning names the line that called Engine.open.
    warnings.warn("Engine.open(db, **options) is deprecated: pass "
                  "config=EngineConfig(**options)", DeprecationWarning, stacklevel=3)
    # The old form took profile=None for the default; the config has no None for it.
    given = {k: v for k, v in options.items() if not (k == "profile" and v is None)}
    return EngineConfig(**given)
