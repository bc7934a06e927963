"""Models the engine builds without validation (``trusted``) are exactly what validation
would build: the same values, the same dumps, and they still refuse assignment."""

from __future__ import annotations

from datetime import timedelta

import pydantic
import pytest

from claimfsm.bench.workflow import PIPELINE
from claimfsm.engine.api import MemoryInput, memory_skill_binding
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.skills.context import FixedClock
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import Revision, SessionState


def _check(revisions: list[Revision]) -> None:
    for r in revisions:
        again = Revision.model_validate(r.model_dump())
        assert again == r and again.model_dump_json() == r.model_dump_json()
        assert SessionState.model_validate(r.state.model_dump()) == r.state
        with pytest.raises(pydantic.ValidationError):
            r.state.claim = "changed"  # type: ignore[misc]  # still frozen


def test_a_custom_machine_s_revisions_validate_to_themselves() -> None:
    store = MemoryStore()
    driver = PIPELINE.driver(store, clock=FixedClock(tick=timedelta(seconds=1)))
    head = driver.run(driver.start("claim", config={"k": [1, 2]}).sid)
    assert head.fsm == "DONE"
    _check(list(store.history(head.sid)))


def test_the_claim_machine_s_revisions_validate_to_themselves() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock(tick=timedelta(seconds=1)))) as eng:
        head = eng.driver.run(eng.start("NASA landed on the Moon in 1969.").sid)
        assert head.fsm == "DONE"
        _check(list(eng.store.history(head.sid)))


def test_a_skill_that_mutates_its_input_cannot_reach_the_stored_state() -> None:
    binding = memory_skill_binding(PIPELINE.bindings["fetch"].skill)
    state = SessionState(sid="s", claim="c", fsm="FETCH", config={"a": 1}, memory={"n": 1})
    assert binding.build is not None
    inp = binding.build(binding.to_input(state, {"sid": "s", "rev": 0, "fsm": "FETCH"}))
    assert isinstance(inp, MemoryInput) and inp.st.rev == 0
    inp.memory["n"] = 99
    inp.config["a"] = 99
    assert state.memory == {"n": 1} and state.config == {"a": 1}
