"""``SessionSettings``: a session's stored config read typed, values exactly as stored,
so the skills' inputs (and recorded sessions) stay byte for byte what they were."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from claimfsm.engine.bindings import DEFAULT_BINDINGS
from claimfsm.engine.profile import RUN_CONFIG, Profile, stored_profile
from claimfsm.engine.settings import SessionSettings
from claimfsm.state.model import SessionState

ST = {"sid": "s", "rev": 0, "fsm": "VERIFY"}


def test_a_profile_s_config_reads_back_as_that_profile() -> None:
    profile = Profile(judge="learned", stance_model="m.npz", retrieval="hybrid")
    settings = SessionSettings.of(profile.config())
    assert settings.profile == profile and isinstance(settings.profile, Profile)
    assert settings.retrieval == "hybrid" and settings.stance_model == "m.npz"
    assert settings.thresholds == RUN_CONFIG["judge"] == "calibrated"
    assert (settings.docs_per_claim, settings.per_claim, settings.min_best, settings.rank,
            settings.claim_lim) == tuple(RUN_CONFIG[k] for k in (
                "docs_per_claim", "per_claim", "min_best", "rank", "claim_lim"))


def test_a_session_from_before_profiles_reads_as_unset() -> None:
    settings = SessionSettings.of({})
    assert settings.profile is None and settings.retrieval is None
    assert (settings.batch, settings.max_rounds) == (1, 1)
    assert settings.judge_input() == {} and settings.extract_input() == {}
    legacy = SessionSettings.of({"stance_model": "old.npz"})
    assert legacy.profile is None and legacy.judge_input() == {"stance_model": "old.npz"}


@pytest.mark.parametrize("stored", [
    "hybrid", {"retrieval": "semantic"}, {"judge": "learned"}, {"colour": "red"},
])
def test_a_stored_value_that_is_no_profile_reads_as_none(stored: Any) -> None:
    assert stored_profile({"profile": stored}) is None
    assert SessionSettings.of({"profile": stored}).retrieval is None


def test_values_are_taken_as_stored_never_converted() -> None:
    settings = SessionSettings.of({"min_best": 1, "docs_per_claim": 3, "rank": False,
                                   "judge": "default"})
    extract = settings.extract_input()
    assert extract == {"docs_per_claim": 3, "min_best": 1, "rank": False}
    assert type(extract["min_best"]) is int  # an int stays an int: same bytes on record
    assert list(extract) == ["docs_per_claim", "min_best", "rank"]  # the skill's order
    assert settings.judge_input() == {"profile": "default"}


def _state(config: dict[str, Any]) -> SessionState:
    return SessionState(sid="s", claim="Honey never spoils.", fsm="VERIFY", config=config)


@pytest.mark.parametrize("config", [
    {},
    Profile().config(),
    {**Profile().config(), "stance_model": "m.npz", "hints": ["honey"], "batch": 2},
    {"judge": "default", "docs_per_claim": 4, "max_rounds": 0, "claim_lim": 0},
])
def test_the_bindings_build_the_inputs_they_always_built(config: dict[str, Any]) -> None:
    state = _state(config)
    # What the bindings built before they read through SessionSettings (loose gets).
    judge = {"profile": config["judge"]} if "judge" in config else {}
    if config.get("stance_model") is not None:
        judge["stance_model"] = config["stance_model"]
    expected = {
        "parse_claim": {"claim": state.claim, "st": ST, "hints": config.get("hints")},
        "stance_judge": {"claims": [], "evidence": {}, **judge, "st": ST},
    }
    for skill, want in expected.items():
        got = DEFAULT_BINDINGS[skill].to_input(state, ST)
        assert orjson.dumps(got) == orjson.dumps(want)
    extract = DEFAULT_BINDINGS["evidence_extract"].to_input(state, ST)
    assert extract["max_rounds"] == config.get("max_rounds", 1)
    keys = [k for k in extract if k in ("docs_per_claim", "per_claim", "min_best", "rank")]
    assert keys == [k for k in ("docs_per_claim", "per_claim", "min_best", "rank")
                    if k in config]
    retrieve = DEFAULT_BINDINGS["retrieve"].to_input(state, ST)
    assert retrieve["batch"] == config.get("batch", 1)
    assert ("claim_lim" in retrieve) == ("claim_lim" in config)
