"""People in the loop: holds (wait states, pause points) and the revisions people commit.

Every function here builds one revision from a session's head (the driver commits it
with compare-and-set, so it lands once or not at all):

- :func:`hold_for`: the hold a step, a start or a decision leaves the session in;
- :func:`input_revision`: a person's input to a wait state (``InputReceived``);
- :func:`resume_revision`: a paused session continues (``Resumed``);
- :func:`edit_revision`: declared fields changed while the session holds (``Edited``);
- :func:`timeout_revision`: a wait state's deadline passed (``TimedOut``).

Where holds are stored and how a session's due time is read: :mod:`claimfsm.state.holds`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from claimfsm.engine.errors import BadInput, ClaimFsmError, ErrorCode
from claimfsm.engine.machine import MachineDef, WaitSpec
from claimfsm.engine.step import iso
from claimfsm.skills.envelope import Envelope
from claimfsm.state.errors import RevConflict
from claimfsm.state.holds import HOLD_KEY, hold_of
from claimfsm.state.model import Revision, SessionState, trusted

__all__ = [
    "ACTOR",
    "NotEditable",
    "NotWaiting",
    "actor_event",
    "check_actor",
    "check_pauses",
    "edit_revision",
    "hold_for",
    "input_revision",
    "may_hold",
    "pauses",
    "resume_revision",
    "timeout_revision",
]

class NotWaiting(ClaimFsmError):
    """Input or resume for a session that does not wait for it."""

    code = ErrorCode.NOT_WAITING


class NotEditable(ClaimFsmError):
    """An edit of an undeclared field, or of a session that neither waits nor is paused."""

    code = ErrorCode.NOT_EDITABLE


def may_hold(definition: MachineDef, config: Mapping[str, Any], after: str) -> bool:
    """Whether a move into ``after`` can start a hold (:func:`hold_for`'s cases, without
    building one): ``after`` is a wait state, or the session has pause points. The step
    asks this first, so the usual move neither reads nor writes a hold."""
    return (after in definition.waits or bool(config.get("pause_before"))
            or bool(config.get("pause_after")))


def pauses(config: Mapping[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The session's pause points: (before, after)."""
    before, after = config.get("pause_before") or (), config.get("pause_after") or ()
    return frozenset(before), frozenset(after)


def check_pauses(definition: MachineDef, config: Mapping[str, Any]) -> None:
    """Refuse pause points that are not a list of the machine's non-final states."""
    for key in ("pause_before", "pause_after"):
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise BadInput(f"{key}: a list of state names, got {value!r}", field=key)
        for name in value:
            if name not in definition.names or name in definition.finals:
                raise BadInput(f"{key}: {name!r} is not a non-final state of machine "
                               f"{definition.name!r}", field=key)


#: The event a step's revision ends with when someone is recorded as having asked for it.
ACTOR = "Actor"


def actor_event(actor: str) -> dict[str, Any]:
    """``{"type": "Actor", "actor": actor}``: who asked for a step (an API key's name)."""
    return {"type": ACTOR, "actor": actor}


def check_actor(actor: str) -> str:
    """An actor name: any non-empty name (an unknown one is allowed)."""
    if not isinstance(actor, str) or not actor.strip():
        raise BadInput("actor: must not be empty", field="actor")
    if len(actor) > 200:
        raise BadInput("actor: longer than 200 characters", field="actor")
    return actor


def hold_for(definition: MachineDef, config: Mapping[str, Any], before: str | None,
             after: str, ts: str, now: datetime) -> dict[str, Any] | None:
    """The hold a session is in after moving ``before -> after`` (``before`` is ``None``
    at the start), or ``None``: a wait state always holds; ``pause_before`` holds on
    entering a state; ``pause_after`` holds after a move out of a state."""
    if after in definition.finals:
        return None
    wait = definition.waits.get(after)
    if wait is not None:
        until = (iso(now + timedelta(seconds=wait.timeout_s))
                 if wait.timeout_s is not None else None)
        return {"kind": "input", "state": after, "input": wait.input_model.__name__,
                "since": ts, "until": until, "on_timeout": wait.on_timeout}
    pause_before, pause_after = pauses(config)
    if not pause_before and not pause_after:
        return None
    if after in pause_before and before != after:
        return {"kind": "pause", "state": after, "when": "before", "since": ts}
    if before in pause_after and before != after:
        return {"kind": "pause", "state": after, "when": "after", "from": before, "since": ts}
    return None


def _with_hold(state: SessionState, fields: dict[str, Any], hold: dict[str, Any] | None
               ) -> dict[str, Any]:
    runtime = {k: v for k, v in state.runtime.items() if k != HOLD_KEY}
    if hold is not None:
        runtime[HOLD_KEY] = hold
    return {**fields, "runtime": runtime}


def _held(head: Revision, expected_rev: int | None) -> dict[str, Any] | None:
    if expected_rev is not None and expected_rev != head.rev:
        raise RevConflict(f"expected_rev is {expected_rev}, the head is {head.rev}",
                          sid=head.sid, expected=expected_rev, head=head.rev)
    return hold_of(head.state)


def _revision(head: Revision, fields: dict[str, Any], fsm: str, ts: str,
              events: list[dict[str, Any]], envelope: dict[str, Any] | None) -> Revision:
    state = trusted(SessionState, {**head.state.__dict__, **fields, "fsm": fsm})
    return trusted(Revision, {
        "sid": head.sid, "rev": head.rev + 1, "parent_rev": head.rev, "fsm": fsm,
        "skill": None, "envelope": envelope, "state": state, "ts": ts, "events": events})


def _moved(definition: MachineDef, head: Revision, fields: dict[str, Any], to: str,
           ts: str, now: datetime, events: list[dict[str, Any]]) -> Revision:
    if to != head.fsm:
        fields = {**fields, "entry_rev": head.rev + 1}
    hold = hold_for(definition, head.state.config, head.fsm, to, ts, now)
    if hold is not None:
        events = [*events, {"type": "Waiting", "hold": hold}]
    fields = _with_hold(head.state, {**fields, "retry": None, "error": None}, hold)
    env = Envelope.ok({}, rev=head.rev + 1, fsm=to).to_dict()
    return _revision(head, fields, to, ts, events, env)


def input_revision(definition: MachineDef, head: Revision, payload: Any, *, actor: str,
                   now: datetime, expected_rev: int | None = None) -> Revision:
    """The revision that commits ``payload`` to the wait state ``head`` is in.

    Raises ``REV_CONFLICT`` for a stale ``expected_rev``, ``NOT_WAITING`` when the session
    does not wait for input, ``BAD_INPUT`` (naming the field) for a payload its input
    model refuses or an empty actor.
    """
    hold = _held(head, expected_rev)
    wait = definition.waits.get(head.fsm)
    if hold is None or hold.get("kind") != "input" or wait is None:
        what = "is paused (claimfsm resume)" if hold else f"is in {head.fsm}"
        raise NotWaiting(f"session {head.sid} does not wait for input: it {what}",
                         sid=head.sid)
    check_actor(actor)
    model = _validate(wait, payload)
    to = wait.route(model) if wait.route is not None else wait.moves[0]
    if to not in wait.moves:
        raise ClaimFsmError(f"wait state {head.fsm}: route chose {to!r}, not one of its moves")
    fields = (wait.apply(head.state, model, actor) if wait.apply is not None
              else {"memory": {**head.state.memory, **_dump(model)}})
    ts = iso(now)
    event = {"type": "InputReceived", "actor": actor, "at": ts, "state": head.fsm,
             "payload": _dump(model)}
    return _moved(definition, head, dict(fields), to, ts, now, [event])


def _validate(wait: WaitSpec, payload: Any) -> Any:
    try:
        return wait.input_model.model_validate(payload)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = str(err["msg"]).removeprefix("Value error, ")
        loc = [str(p) for p in err["loc"]]
        if not loc and ": " in msg:  # a model-level check names its field first
            name, msg = msg.split(": ", 1)
            loc = [name]
        field = ".".join(["input", *loc])
        raise BadInput(f"{field}: {msg}", field=field) from None


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json", exclude_unset=True)


def resume_revision(definition: MachineDef, head: Revision, *, actor: str, now: datetime,
                    expected_rev: int | None = None) -> Revision:
    """The revision that lifts a pause (``NOT_WAITING`` if the session is not paused)."""
    hold = _held(head, expected_rev)
    if hold is None or hold.get("kind") != "pause":
        what = "waits for input (claimfsm input)" if hold else "is not paused"
        raise NotWaiting(f"session {head.sid} {what}", sid=head.sid)
    check_actor(actor)
    ts = iso(now)
    event = {"type": "Resumed", "actor": actor, "at": ts, "state": head.fsm}
    fields = _with_hold(head.state, {}, None)
    return _revision(head, fields, head.fsm, ts, [event], None)


def timeout_revision(definition: MachineDef, head: Revision, now: datetime) -> Revision | None:
    """The revision a passed wait deadline commits (``None`` when it has not passed)."""
    hold = hold_of(head.state)
    if hold is None or not hold.get("until") or not hold.get("on_timeout"):
        return None
    if datetime.fromisoformat(str(hold["until"])) > now:
        return None
    ts = iso(now)
    event = {"type": "TimedOut", "state": head.fsm, "until": hold["until"], "at": ts}
    return _moved(definition, head, {}, str(hold["on_timeout"]), ts, now, [event])


def edit_revision(definition: MachineDef, head: Revision, changes: Sequence[tuple[str, Any]],
                  *, actor: str, now: datetime, expected_rev: int | None = None) -> Revision:
    """The revision that sets ``changes`` (``[(field, value)]``) on a session that holds.

    ``NOT_EDITABLE`` for a field the machine does not declare or a session that neither
    waits nor is paused; ``BAD_INPUT`` for a value of the wrong shape.
    """
    hold = _held(head, expected_rev)
    if hold is None:
        raise NotEditable(f"session {head.sid} is neither waiting nor paused: edit it when "
                          "it holds (--pause-before/--pause-after)", sid=head.sid)
    check_actor(actor)
    if not changes:
        raise BadInput("set: no FIELD=JSON given", field="set")
    allowed = definition.editable
    fields: dict[str, Any] = {}
    listed: list[dict[str, Any]] = []
    for path, value in changes:
        top, _, key = path.partition(".")
        if not (path in allowed or (key and f"{top}.*" in allowed)):
            raise NotEditable(f"{path}: not editable (editable: {', '.join(allowed) or 'none'})",
                              field=path)
        old = fields.get(top, getattr(head.state, top))
        value = _check_value(path, value, head.state)
        if key:
            old_value = old.get(key)
            new = {**old, key: value}
        else:
            old_value, new = old, value
        fields[top] = new
        listed.append({"field": path, "old": old_value, "new": value})
    ts = iso(now)
    event = {"type": "Edited", "actor": actor, "at": ts, "changes": listed}
    try:
        state = SessionState.model_validate({**head.state.model_dump(), **fields})
    except ValidationError as exc:
        raise BadInput(f"{changes[0][0]}: {exc.errors()[0]['msg']}",
                       field=changes[0][0]) from None
    return _revision(head, {k: getattr(state, k) for k in fields}, head.fsm, ts, [event],
                     None)


def _check_value(path: str, value: Any, state: SessionState) -> Any:
    """``value`` as the field holds it: a list of the item model the skills read (a
    subclaim, a query plan, an evidence sentence), so an edit cannot break the next step."""
    from pydantic import TypeAdapter

    from claimfsm.skills.evidence_extract import Claim, EvidenceItem
    from claimfsm.skills.followups import PlanIn

    top, _, key = path.partition(".")
    if top == "evidence" and key not in {c["id"] for c in state.subclaims}:
        raise BadInput(f"{path}: {key!r} is not a subclaim id", field=path)
    item: Any = {"subclaims": Claim, "plans": PlanIn, "evidence": EvidenceItem}.get(top)
    if item is None:  # a custom machine's field: any JSON the state's model accepts
        return value
    try:
        checked: list[Any] = TypeAdapter(list[item]).validate_python(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join([path, *(str(p) for p in err["loc"])])
        raise BadInput(f"{where}: {err['msg']}", field=path) from None
    return [c.model_dump(mode="json", by_alias=True) for c in checked]
