"""The ``transitions`` machine behind :class:`claimfsm.engine.machine.Machine`: one per definition,
built once per process, with the small subclasses that keep a move cheap.

Every move of a session fires the ``transitions`` event of its destination
(``Event.trigger`` -> ``Machine._process`` -> the transition's state change):
``transitions`` stays the engine of record. The subclasses use the extension points it
provides (``state_cls``, ``transition_cls``, ``event_cls``) only to skip callback loops
and log calls when there are no callbacks, which is always the case here.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from transitions import Event, State, Transition
from transitions import Machine as _Machine
from transitions.core import EventData

from claimfsm._base.record import Record

if TYPE_CHECKING:
    from claimfsm.engine.machine import MachineDef

__all__ = ["CompiledMachine", "build_engine", "cached_engine", "trigger_name"]


class _State(State):
    """A ``transitions`` state that skips its callback plumbing (two log calls and an
    empty callback loop each way) when it has no callbacks: none are ever registered
    here, and a move is then only the model's state changing.
    """

    def enter(self, event_data: EventData) -> None:
        if self.on_enter:
            State.enter(self, event_data)

    def exit(self, event_data: EventData) -> None:
        if self.on_exit:
            State.exit(self, event_data)


class _Transition(Transition):
    """A ``transitions`` transition that, when it and its machine have no callbacks or
    conditions (always, here), goes straight to the state change: the same outcome
    without four empty callback loops and four log calls. Otherwise the stock path.
    """

    def execute(self, event_data: EventData) -> bool:
        machine = event_data.machine
        if (self.prepare or self.conditions or self.before or self.after or not self.dest
                or machine.before_state_change or machine.after_state_change):
            return bool(Transition.execute(self, event_data))
        self._change_state(event_data)
        return True

    def _change_state(self, event_data: EventData) -> None:
        # ``Transition._change_state`` of transitions 0.9 with the states looked up once
        # by name (this machine's states are plain strings): exit the source, set the
        # model, enter the destination, run the final-state callbacks.
        machine = event_data.machine
        states = machine.states
        assert self.dest is not None  # only called for transitions with a destination
        dest = states[self.dest]
        states[self.source].exit(event_data)
        # ``machine.set_state(dest, model)`` for one model: the attribute it sets.
        setattr(event_data.model, machine.model_attribute, dest.value)
        event_data.state = dest
        dest.enter(event_data)
        if dest.final:
            machine.callbacks(machine.on_final, event_data)


class _Event(Event):
    """A ``transitions`` event whose machine has no prepare, finalize or exception
    callbacks (always, here) runs its transitions without those empty loops and their
    log call; with any of them, the stock path. What it does is ``Event.trigger``,
    ``Event._trigger`` and ``Event._process`` of transitions 0.9 otherwise: find the
    model's state, refuse an invalid source, execute the first transition that succeeds.
    """

    def trigger(self, model: object, *args: object, **kwargs: object) -> bool:
        # ``Event.trigger`` hands ``_trigger`` to ``Machine._process``, which only queues
        # it on a queued machine; otherwise it calls it at once, as this does.
        machine = self.machine
        if machine.has_queue:
            return bool(Event.trigger(self, model, *args, **kwargs))
        if not (args or kwargs or machine.prepare_event or machine.finalize_event
                or machine.on_exception or machine.before_state_change
                or machine.after_state_change):
            moved = self._plain_move(model)
            if moved:
                return True
        return self._trigger(EventData(None, self, machine, model, args=args, kwargs=kwargs))

    def _plain_move(self, model: object) -> bool:
        """``_trigger``, ``execute`` and ``_change_state`` below, in one call, for the move
        every step makes: the model in a known state, one transition out of it with a
        destination, no callback or condition on it or on either state. ``False``: not
        such a move (nothing done; the caller takes the general path)."""
        machine = self.machine
        attr = machine.model_attribute
        name = getattr(model, attr)
        states = machine.states
        state = states.get(name) if type(name) is str else None
        if state is None or state.on_exit:
            return False
        found = self.transitions.get(state.name)
        if found is None or len(found) != 1:
            return False
        trans = found[0]
        if (trans.prepare or trans.conditions or trans.before or trans.after
                or not trans.dest):
            return False
        dest = states[trans.dest]
        if dest.on_enter or (dest.final and machine.on_final):
            return False
        setattr(model, attr, dest.value)
        return True

    def _trigger(self, event_data: EventData) -> bool:
        machine = self.machine
        if machine.prepare_event or machine.finalize_event or machine.on_exception:
            return bool(Event._trigger(self, event_data))
        # ``machine.get_model_state(model)``: the model's state by name (plain strings here).
        name = getattr(event_data.model, machine.model_attribute)
        state = machine.states.get(name) if type(name) is str else None
        event_data.state = state = state or machine.get_model_state(event_data.model)
        if self._is_valid_source(state):
            for trans in self.transitions[state.name]:
                event_data.transition = trans
                if trans.execute(event_data):
                    event_data.result = True
                    break
        return bool(event_data.result)


class _TMachine(_Machine):
    """``transitions.Machine`` with the three classes above: every move is still fired
    through the machine's event (``Event.trigger``, ``Machine._process``, the
    transition's ``_change_state``), which stays the engine of record.
    """

    event_cls = _Event
    state_cls = _State
    transition_cls = _Transition


class _Model:
    """The object ``transitions`` moves; one per façade, re-positioned per move."""

    state: str


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class CompiledMachine(Record):
    """The ``transitions`` machine of one definition, shared by all its façades."""

    tm: _TMachine
    model: _Model
    firing: threading.Lock

    def __init__(self, tm: _TMachine, model: _Model, firing: threading.Lock) -> None:
        self.tm = tm
        self.model = model
        self.firing = firing


def build_engine(definition: MachineDef) -> CompiledMachine:
    """Check ``definition`` and build its ``transitions`` machine (no auto transitions,
    invalid triggers raise)."""
    definition.validate()
    model = _Model()
    tm = _TMachine(
        model=model,
        states=list(definition.names),
        initial=definition.initial,
        auto_transitions=False,
        ignore_invalid_triggers=False,
    )
    for src, dst in definition.transitions:
        tm.add_transition(trigger=trigger_name(dst), source=src, dest=dst)
    return CompiledMachine(tm, model, threading.Lock())


# Definitions are frozen values: check and build each once per process (a replay or a
# test builds a driver per session; this keeps that cheap).
cached_engine = functools.lru_cache(maxsize=64)(build_engine)


def trigger_name(dst: str) -> str:
    """The name of the trigger that moves a model to ``dst``."""
    return f"to__{dst}"
