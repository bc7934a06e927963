"""``EngineConfig``: one frozen value for everything ``Engine.open`` takes besides the db;
the old keyword form still works (deprecated) and opens the same engine."""

from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import FIXTURES, Engine
from claimfsm.engine.settings import SessionSettings
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.builtin import builtin_tools
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.limits import RateLimit
from claimfsm.skills.tools.policies import FetchBeforeExtractPolicy
from claimfsm.state.open import locate
from tests.support.spies import db_parses, profiles_written

ROOT = Path(__file__).resolve().parents[2]
DEMO = [item["claim"] for item in orjson.loads((FIXTURES / "demo_claims.json").read_bytes())]


def test_the_config_is_frozen() -> None:
    config = EngineConfig(seed=False)
    with pytest.raises(ValidationError, match="frozen"):
        config.seed = True  # type: ignore[misc]
    assert config.model_copy(update={"seed": True}).seed and not config.seed


@pytest.mark.parametrize("key", ["clok", "extra_tool", "db"])
def test_an_unknown_key_is_refused_by_name(key: str) -> None:
    with pytest.raises(ValidationError) as info:
        EngineConfig(**{key: 1})
    assert key in str(info.value) and "Extra inputs are not permitted" in str(info.value)
    with pytest.raises(TypeError, match=repr(key)):
        EngineConfig.trusted(**{key: 1})
    with pytest.raises(TypeError, match=repr(key)):
        Engine.open(None, **{key: 1})


def test_a_bad_value_is_refused_by_field() -> None:
    with pytest.raises(ValidationError) as info:
        EngineConfig(durability="sometimes")  # type: ignore[arg-type]
    assert info.value.errors()[0]["loc"] == ("durability",)
    with pytest.raises(ValidationError) as info:
        EngineConfig(clock="now")  # type: ignore[arg-type]
    assert info.value.errors()[0]["loc"] == ("clock",)


def test_the_default_is_the_validated_default() -> None:
    assert EngineConfig.default() == EngineConfig() == EngineConfig.trusted()
    assert EngineConfig().profile == Profile() and EngineConfig().profile.is_default
    assert (EngineConfig().durability, EngineConfig().create, EngineConfig().seed) == (
        "normal", True, True)


def test_the_caller_s_objects_are_kept_as_they_are() -> None:
    index = EvidenceIndex.open(":memory:")
    tools = builtin_tools(index)[:2]
    policy, clock, profile = FetchBeforeExtractPolicy(), FixedClock(), Profile(retrieval="lexical")
    limit, thing = RateLimit(capacity=1, per_seconds=2.0), object()
    config = EngineConfig(extra_tools=tools, policies=[policy], clock=clock, profile=profile,
                          rate_limits={"search": limit}, resources={"thing": thing},
                          bind={"RETRIEVAL": ["search"]})
    assert all(a is b for a, b in zip(config.extra_tools, tools, strict=True))
    assert config.policies is not None and config.policies[0] is policy
    assert config.clock is clock and config.profile is profile
    assert config.rate_limits is not None and config.rate_limits["search"] is limit
    assert config.resources is not None and config.resources["thing"] is thing
    assert config.bind == {"RETRIEVAL": ("search",)}
    index.close()


def _run_demo(engine: Engine) -> list[Any]:
    out = []
    for n, claim in enumerate(DEMO):
        # What Engine.start does, with a fixed session id so the two runs compare.
        first = engine.driver.start(claim, sid=f"s{n}", config=engine.profile.config())
        head = engine.driver.run(first.sid)
        out.append([(r.rev, r.fsm, r.envelope, r.state.model_dump(mode="json"), r.ts)
                    for r in engine.store.history(head.sid)])
    return out


def test_config_and_the_old_keywords_open_the_same_engine() -> None:
    def clock() -> FixedClock:
        return FixedClock(tick=timedelta(milliseconds=1))

    with Engine.open(None, config=EngineConfig(clock=clock(), seed=True)) as engine:
        by_config = _run_demo(engine)
    with pytest.warns(DeprecationWarning, match="config=EngineConfig"):
        old = Engine.open(None, clock=clock(), seed=True)
    with old:
        by_keywords = _run_demo(old)
    assert by_config == by_keywords and len(by_config) == len(DEMO)
    assert {steps[-1][1] for steps in by_config} == {"DONE"}


def test_the_old_keywords_build_the_config_they_name() -> None:
    clock = FixedClock()
    with pytest.warns(DeprecationWarning), Engine.open(
            None, clock=clock, seed=False, profile=None) as engine:
        assert engine.driver.clock is clock and engine.profile.is_default
        assert engine.index.count_documents() == 0  # seed=False reached the engine


def test_keywords_and_a_config_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not as keywords"):
        Engine.open(None, config=EngineConfig(), seed=False)


def test_the_profile_given_is_the_one_sessions_start_with(
        monkeypatch: pytest.MonkeyPatch) -> None:
    profile = Profile.model_validate({"retrieval": "lexical"})  # not the shared default
    written = profiles_written(monkeypatch)
    read: list[Any] = []
    original = SessionSettings.of.__func__  # type: ignore[attr-defined]

    def spy(cls: type[SessionSettings], config: Any) -> SessionSettings:
        settings: SessionSettings = original(cls, config)
        read.append(settings.profile)
        return settings

    monkeypatch.setattr(SessionSettings, "of", classmethod(spy))
    with Engine.open(None, config=EngineConfig(profile=profile)) as engine:
        assert engine.profile is profile
        head = engine.start(DEMO[0])
        assert written and all(p is profile for p in written)
        engine.driver.run(head.sid)
    # Every step reads the stored profile back as a Profile (equal, typed: no dict).
    assert read and all(isinstance(p, Profile) and p == profile for p in read)


def test_a_db_value_is_parsed_once_per_open(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "once.db")
    parses = db_parses(monkeypatch)
    Engine.open(db).close()
    assert parses == [db]
    where = locate(db)  # this module's own locate: not spied on
    Engine.open(where).close()  # a location is not parsed again
    assert parses == [db]
    Engine.open(Path(db), config=EngineConfig(seed=False, create=False)).close()
    assert parses == [db, db]


def _engine_open_keywords(path: Path) -> list[str]:
    """``file:line`` of every ``Engine.open(...)`` call passing a keyword besides config."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "open" and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("Engine", "Service")
                and any(k.arg != "config" and k.arg != "records" for k in node.keywords)):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_caller_in_the_repository_uses_the_config_form() -> None:
    files = [p for part in ("fsm", "skills", "state", "tests", "docs")
             for p in (ROOT / part).rglob("*.py")]
    old = [hit for path in files if path != Path(__file__).resolve()
           for hit in _engine_open_keywords(path)]
    assert old == []
