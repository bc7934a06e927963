"""The machine definition checks, the transitions façade and the generated diagram."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from claimfsm.engine.errors import IllegalTransition, MachineDefinitionError
from claimfsm.engine.machine import (
    DEFAULT_MACHINE,
    Machine,
    MachineDef,
    RetryPolicy,
    StateSpec,
    mermaid,
)

ROOT = Path(__file__).resolve().parents[2]


def _def(states: tuple[StateSpec, ...], edges: tuple[tuple[str, str], ...], initial: str = "A"
         ) -> MachineDef:
    return MachineDef(name="t", states=states, transitions=edges, initial=initial)


def test_default_machine_is_valid_and_has_the_design_states() -> None:
    assert DEFAULT_MACHINE.problems() == []
    assert DEFAULT_MACHINE.names == ("PARSE_CLAIM", "RETRIEVAL", "EXTRACT", "VERIFY",
                                     "AGGREGATE", "REVIEW", "DONE", "FAILED")
    assert DEFAULT_MACHINE.finals == {"DONE", "FAILED"}
    assert set(DEFAULT_MACHINE.waits) == {"REVIEW"}
    for spec in DEFAULT_MACHINE.states:
        assert (spec.skill is None) == (spec.final or spec.wait is not None)


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        (_def((StateSpec("A", "s"), StateSpec("Z", final=True)), (("A", "Z"),), initial="Q"),
         "initial state 'Q'"),
        (_def((StateSpec("A", "s"), StateSpec("B", "s"), StateSpec("Z", final=True)),
              (("A", "Z"), ("B", "Z"))), "state B is unreachable"),
        (_def((StateSpec("A", "s"), StateSpec("B", "s"), StateSpec("Z", final=True)),
              (("A", "B"), ("B", "B"), ("A", "Z"))), "state B cannot reach a final state"),
        (_def((StateSpec("A"), StateSpec("Z", final=True)), (("A", "Z"),)), "binds no skill"),
        (_def((StateSpec("A", "s"), StateSpec("Z", final=True)), (("A", "Z"), ("Z", "A"))),
         "final state Z has outgoing"),
        (_def((StateSpec("A", "s"), StateSpec("Z", final=True)), (("A", "Y"),)),
         "unknown state 'Y'"),
        (_def((StateSpec("A", "s"), StateSpec("A", "s"), StateSpec("Z", final=True)),
              (("A", "Z"),)), "duplicate states"),
        (_def((StateSpec("A", "s"), StateSpec("B", "s")), (("A", "B"),)), "no final state"),
    ],
)
def test_definition_checks_refuse_bad_machines(definition: MachineDef, fragment: str) -> None:
    with pytest.raises(MachineDefinitionError) as info:
        Machine(definition)
    assert fragment in str(info.value)
    assert info.value.code == "BAD_MACHINE"
    assert any(fragment in p for p in info.value.context["problems"])


def test_legal_moves_fire_and_illegal_ones_raise() -> None:
    m = Machine(DEFAULT_MACHINE)
    assert m.move("PARSE_CLAIM", "RETRIEVAL") == "RETRIEVAL"
    assert m.move("RETRIEVAL", "RETRIEVAL") == "RETRIEVAL"
    assert m.move("EXTRACT", "RETRIEVAL") == "RETRIEVAL"
    for src, dst in [("PARSE_CLAIM", "DONE"), ("VERIFY", "EXTRACT"), ("DONE", "FAILED"),
                     ("NOPE", "DONE")]:
        assert not m.can(src, dst)
        with pytest.raises(IllegalTransition) as info:
            m.move(src, dst)
        assert info.value.code == "ILLEGAL_TRANSITION"


def test_no_auto_transitions_exist() -> None:
    m = Machine(DEFAULT_MACHINE)
    assert not hasattr(m._model, "to_DONE")  # transitions' auto triggers are off


def test_retry_backoff_is_capped_exponential() -> None:
    p = RetryPolicy(backoff_s=1, factor=2, cap_s=5)
    assert [p.delay(n) for n in (1, 2, 3, 4)] == [1, 2, 4, 5]


def test_committed_diagram_matches_the_machine() -> None:
    doc = (ROOT / "docs" / "state-diagram.md").read_text()
    generated = mermaid(DEFAULT_MACHINE)
    assert f"```mermaid\n{generated}```" in doc, "run `claimfsm diagram` and update docs"


def test_diagram_lists_every_transition_and_final_state() -> None:
    text = mermaid(DEFAULT_MACHINE)
    assert text.startswith("stateDiagram-v2\n    [*] --> PARSE_CLAIM\n")
    for src, dst in DEFAULT_MACHINE.transitions:
        assert f"    {src} --> {dst}\n" in text
    assert "    DONE --> [*]\n" in text and "    FAILED --> [*]\n" in text


def test_every_move_fires_the_transitions_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine of record is ``transitions``: each committed move of a session is one
    trigger of the destination's event, which moves the machine's model there."""
    from claimfsm.engine.firing import _Event
    from claimfsm.engine.runtime import Engine

    fired: list[str] = []
    original = _Event.trigger

    def counting(self: _Event, model: object, *args: object, **kwargs: object) -> bool:
        fired.append(self.name)
        result = original(self, model, *args, **kwargs)
        assert getattr(model, "state") == self.name.removeprefix("to__")  # noqa: B009
        return result

    monkeypatch.setattr(_Event, "trigger", counting)
    with Engine.open(":memory:") as eng:
        head = eng.driver.run(eng.start("Honey never spoils.").sid)
        moves = [(r.fsm, r.parent_rev) for r in eng.store.history(head.sid)[1:]]
    assert fired == [f"to__{fsm}" for fsm, _ in moves]
    assert fired[-1] == f"to__{head.fsm}"


def test_a_machine_with_callbacks_takes_transitions_own_path() -> None:
    """The short cuts apply only without callbacks: a prepare callback is still called."""
    m = Machine(_def((StateSpec("A", "s"), StateSpec("Z", final=True)), (("A", "Z"),)))
    seen: list[str] = []
    tm = m._tm
    tm.prepare_event = [lambda *_: seen.append("prepare")]
    try:
        assert m.fire("A", "Z") == "Z"
    finally:
        tm.prepare_event = []
    assert seen == ["prepare"]


@pytest.mark.parametrize("where", ["on_exit", "on_enter", "before", "after", "conditions",
                                   "before_state_change", "on_final"])
def test_a_move_with_any_callback_still_calls_it(where: str) -> None:
    """The one-call move is taken only without callbacks: with a callback on the source,
    the destination, the transition or the machine, ``transitions`` calls it."""
    m = Machine(_def((StateSpec("A", "s"), StateSpec("Z", final=True)), (("A", "Z"),)))
    from transitions.core import Condition

    tm = m._tm
    seen: list[str] = []

    def note(*_: object) -> bool:
        seen.append(where)
        return True

    trans = tm.events["to__Z"].transitions["A"][0]
    owner: Any = {"on_exit": tm.states["A"], "on_enter": tm.states["Z"], "before": trans,
                  "after": trans, "before_state_change": tm, "on_final": tm}.get(where)
    if where == "conditions":
        trans.conditions = [Condition(note)]
    else:
        setattr(owner, where, [note])
    if where == "on_final":  # transitions calls it on entering a state marked final
        tm.states["Z"].final = True
    try:
        assert m.fire("A", "Z") == "Z"
    finally:
        trans.conditions, trans.before, trans.after = [], [], []
        tm.states["A"].on_exit, tm.states["Z"].on_enter = [], []
        tm.before_state_change, tm.on_final = [], []
        tm.states["Z"].final = False
    assert seen == [where]
