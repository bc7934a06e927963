"""The CLI loads only what a command uses: ``show`` reads the store without skills, tools,
session limits, the transitions machine or any compiled validator; ``step`` imports the
one skill it runs. (Timing is the benchmark's job, ``cli_step_ms``; this checks the
imports that drive it: docs/bench.md has the ``python -X importtime`` findings.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from tests.support.spies import modules_loaded_by

_PROBE = """
import sys
import claimfsm.cli
from claimfsm.cli import main
# Count the validators compiled: pydantic asks the plugin loader once for each.
built = []
asked = claimfsm.cli._get_plugins
claimfsm.cli._get_plugins = lambda: (built.append(1), asked())[1]
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loader = sys.modules.get("pydantic.plugin._loader")
print("\\nMODULES " + " ".join(sorted(m for m in sys.modules if m.split(".")[0] in
      ("claimfsm", "fsm", "skills", "state", "transitions", "numpy", "tomllib")
      or m.startswith(("pydantic.plugin", "importlib.metadata")))),
      file=sys.stderr)
print("VALIDATORS", len(built), "LOADER", getattr(loader, "__file__", "stand-in"),
      file=sys.stderr)
"""


def _probe(*args: str) -> tuple[set[str], int]:
    """The modules a command loaded, and the validators it compiled."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True,
                          text=True, timeout=120, check=False)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    loaded = set(line.split()[1:])
    built = next(x for x in proc.stderr.splitlines() if x.startswith("VALIDATORS ")).split()
    # pydantic's own plugin loader (and importlib.metadata under it) never loads: the
    # CLI's stand-in answers for it while the variable disables plugins.
    assert built[3] == "stand-in" and not {m for m in loaded if m.startswith("importlib.metadata")}
    return loaded, int(built[1])


def _modules(*args: str) -> set[str]:
    loaded, _ = _probe(*args)
    # The library owns one import name: nothing may load under the folders' own names.
    assert not {m for m in loaded if m.split(".")[0] in ("fsm", "skills", "state")}, loaded
    return loaded


def _session(tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "demo.db")
    with Engine.open(db) as eng:
        sid = eng.start("Honey never spoils.").sid
    return db, sid


def test_show_reads_the_store_without_the_engine(tmp_path: Path) -> None:
    db, sid = _session(tmp_path)
    loaded, built = _probe("show", sid, "--db", db)
    assert "claimfsm.state.sqlite.store" in loaded and "claimfsm.engine.views" in loaded
    assert not loaded & {"claimfsm.engine.runtime", "claimfsm.engine.driver", "claimfsm.replay",
                         "transitions", "claimfsm.skills.registry", "claimfsm.skills.parse_claim",
                         "claimfsm.skills.retrieve", "claimfsm.skills.tools.index",
                         "claimfsm.state.catalog", "claimfsm.ui"}
    # Nothing of the skills at all: the session limits' options (engine.limits loads the
    # tool runtime) belong to the commands that run sessions, not to claimfsm.cli.read.
    assert not {m for m in loaded if m.startswith("claimfsm.skills")}
    assert not loaded & {"claimfsm.engine.limits", "claimfsm.cli.limits", "claimfsm.cli.session",
                         "claimfsm.engine.bindings", "claimfsm.state.memory",
                         "claimfsm.state.rollback"}
    assert built == 0  # no validator compiled
    assert not loaded & {"numpy", "tomllib"}  # no config file is read: no TOML parser


def test_step_imports_only_the_skill_it_runs(tmp_path: Path) -> None:
    db, sid = _session(tmp_path)
    loaded, built = _probe("step", sid, "--db", db)
    assert "claimfsm.skills.parse_claim" in loaded and "transitions" in loaded
    assert built > 0  # a step validates: the stand-in loader answered for pydantic's
    assert not loaded & {"claimfsm.skills.registry", "claimfsm.skills.stance_judge",
                         "claimfsm.skills.verdict_aggregate", "claimfsm.skills.evidence_extract",
                         "claimfsm.skills.retrieve", "claimfsm.skills.tools.ingest",
                         "claimfsm.replay", "claimfsm.eval", "claimfsm.bench", "claimfsm.ui",
                         "claimfsm.state.catalog", "starlette", "claimfsm.cli.read",
                         "claimfsm.state.memory", "claimfsm.skills.stance", "numpy", "tomllib"}
    with Engine.open(db, config=EngineConfig(seed=False)) as eng:  # and the step did land
        assert eng.store.head(sid).rev == 1


def test_a_step_without_tools_compiles_no_tool_model_nor_the_review_input(
        tmp_path: Path) -> None:
    # Engine.open trusts the built-in tools' examples (tests/skills/tools checks them)
    # and the machine's version takes ReviewInput's schema digest as declared: neither
    # compiles a validator any more (16 and 1 of the 21 a PARSE_CLAIM step compiled).
    db, sid = _session(tmp_path)
    probe = f"""
import sys
import pydantic._internal._model_construction as construction
built = []
complete = construction.complete_model_class
def counted(cls, *args, **kwargs):
    done = complete(cls, *args, **kwargs)
    if done:
        built.append(cls.__module__ + "." + cls.__qualname__)
    return done
construction.complete_model_class = counted
from claimfsm.cli import main
try:
    main(["step", {sid!r}, "--db", {db!r}])
except SystemExit:
    pass
print("BUILT", " ".join(built), file=sys.stderr)
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)
    built = next(x for x in proc.stderr.splitlines() if x.startswith("BUILT")).split()[1:]
    assert "claimfsm.skills.parse_claim.Output" in built  # the step ran and validated
    assert not [m for m in built if m.startswith(("claimfsm.skills.tools.", "claimfsm.engine."))]


def test_show_json_is_unchanged_by_the_store_only_open(tmp_path: Path) -> None:
    db, sid = _session(tmp_path)
    proc = subprocess.run([sys.executable, "-c", "from claimfsm.cli import main; main()", "show",
                           sid, "--db", db, "--json"], capture_output=True, timeout=120,
                          check=True)
    shown = orjson.loads(proc.stdout)
    with Engine.open(db, config=EngineConfig(seed=False)) as eng:
        from claimfsm.engine.views import revision_json

        head = eng.store.head(sid)
        # plus the session's machine version (docs/versioning.md) and lineage
        assert shown == {**orjson.loads(orjson.dumps(revision_json(head))),
                         "version": eng.driver.version, "forked_from": None, "forks": []}


def test_a_retrieval_step_loads_neither_the_planner_s_analysis_nor_the_memory_store(
        tmp_path: Path) -> None:
    db, sid = _session(tmp_path)
    with Engine.open(db, config=EngineConfig(seed=False)) as eng:
        assert eng.driver.step(sid).after == "RETRIEVAL"
    loaded = _modules("step", sid, "--db", db)
    assert "claimfsm.skills.retrieve" in loaded and "claimfsm.skills.tools.index" in loaded
    # The index needs skills.analysis.text only; the package no longer imports the rest.
    assert not loaded & {"claimfsm.skills.parse_claim", "claimfsm.skills.evidence_query_plan",
                         "claimfsm.skills.analysis.terms", "claimfsm.skills.analysis.split",
                         "claimfsm.state.memory", "claimfsm.cli.read", "claimfsm.skills.stance"}


def test_lazy_package_exports_resolve_to_what_they_name() -> None:
    probe = """
import sys
import claimfsm.skills.analysis as analysis
import claimfsm.state as state
assert "claimfsm.state.sqlite" not in sys.modules and "claimfsm.state.memory" not in sys.modules
assert "claimfsm.skills.analysis.terms" not in sys.modules
import importlib
for package in (analysis, state):
    for name in package.__all__:
        where = package._WHERE.get(name, "fsck")
        if not where.startswith("claimfsm."):
            where = f"{package.__name__}.{where}"
        home = importlib.import_module(where)
        assert getattr(package, name) is getattr(home, name), name
import claimfsm.state.fsck  # the module: the package's ``fsck`` stays the function
from claimfsm.state import fsck, SQLiteStore, MemoryStore
from claimfsm.state.sqlite.store import SQLiteStore as direct
assert callable(fsck) and not isinstance(fsck, type(sys)) and SQLiteStore is direct
print("OK")
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.stdout.strip() == "OK", out.stderr[-2000:]


def test_the_profile_s_claim_lim_is_the_retrieval_skill_s() -> None:
    from claimfsm.engine.profile import RUN_CONFIG
    from claimfsm.skills.retrieve import CLAIM_LIM

    assert RUN_CONFIG["claim_lim"] == CLAIM_LIM  # written out there to keep imports light


def test_default_bindings_import_a_skill_only_when_it_is_used() -> None:
    probe = """
import sys
from claimfsm.engine.bindings import DEFAULT_BINDINGS as b
before = {m for m in sys.modules if m.startswith("skills.") and m.count(".") == 1}
assert "retrieve" in b and "nope" not in b and len(b) == 5 and list(b)[0] == "parse_claim"
assert "claimfsm.skills.retrieve" not in sys.modules
assert b["retrieve"].skill.name == "retrieve" and b["retrieve"] is b["retrieve"]
print(sorted(before), "claimfsm.skills.retrieve" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip().endswith("True") and "claimfsm.skills.parse_claim" not in out


def test_show_builds_no_schema_for_the_models_it_only_constructs(tmp_path: Path) -> None:
    # Revisions read from the store are built trusted (model_construct): with
    # defer_build their validators are never compiled, which is most of a model's import.
    db, sid = _session(tmp_path)
    probe = f"""
import sys
from claimfsm.cli import main
try:
    main(["show", {sid!r}, "--db", {db!r}])
except SystemExit:
    pass
from claimfsm.engine.profile import Profile
from claimfsm.state.model import Revision, SessionState
print("COMPLETE", Revision.__pydantic_complete__, SessionState.__pydantic_complete__,
      Profile.__pydantic_complete__, file=sys.stderr)
"""
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=False)
    assert "COMPLETE False False False" in proc.stderr, proc.stderr[-2000:]
    assert sid in proc.stdout


def test_every_model_defers_its_schema_to_first_validation() -> None:
    import importlib
    import pkgutil

    from pydantic import BaseModel

    import claimfsm
    import claimfsm.skills
    import claimfsm.state

    eager = []
    # Each folder is walked on its own: skills/ and state/ are not inside fsm/ on disk.
    for package in (claimfsm, claimfsm.skills, claimfsm.state):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__"):
                continue
            try:
                module = importlib.import_module(info.name)
            except ImportError:  # an optional extra this install lacks
                continue
            for value in vars(module).values():
                if (isinstance(value, type) and issubclass(value, BaseModel)
                        and value.__module__ == module.__name__
                        and not value.model_config.get("defer_build")):
                    eager.append(f"{module.__name__}.{value.__qualname__}")
    assert eager == []


#: What no step of a session on a SQLite file may load: HTTP clients and TLS (model.chat
#: loads http.client on its first call), the PostgreSQL index, numpy (the dense ranking's),
#: the web UI, OpenTelemetry (--otel only), and the options of the other session commands.
_NOT_IN_A_STEP = {"http.client", "ssl", "httpx", "urllib.request", "numpy", "psycopg",
                  "starlette", "opentelemetry", "asyncio", "claimfsm.skills.tools.index_pg",
                  "claimfsm.cli.session", "claimfsm.cli.people", "claimfsm.cli.limits",
                  "claimfsm.cli.read", "claimfsm.engine.whatif"}


def test_no_step_of_a_session_loads_http_tls_postgres_numpy_or_other_commands(
        tmp_path: Path) -> None:
    db = str(tmp_path / "demo.db")
    with Engine.open(db) as eng:  # the claim the benchmark's cli_step_ms steps: 7 steps
        sid = eng.start("NASA landed on the Moon in 1969.").sid
    states = []
    for _ in range(20):  # every state of the session, to DONE
        loaded = modules_loaded_by("step", sid, "--db", db)
        assert "claimfsm.cli.step" in loaded
        assert not {m for m in loaded if m.split(".")[0] in _NOT_IN_A_STEP
                    or m in _NOT_IN_A_STEP}
        with Engine.open(db, config=EngineConfig(seed=False)) as eng:
            states.append(eng.store.head(sid).fsm)
        if states[-1] in ("DONE", "FAILED"):
            break
    # the steps that call tools (searches, sentence extraction) were among them
    assert states[-1] == "DONE" and {"RETRIEVAL", "EXTRACT", "VERIFY"} <= set(states)
