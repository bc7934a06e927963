"""A machine's version: a digest of its definition and of what its skills declare.

The version of a machine is the sha256 of the canonical JSON (sorted keys, no object ids,
no paths) of its definition (states, moves, bound skill names, retry policies) and, per
bound skill, its declared ``version`` and the digests of the files it reads. It is
computed once per definition and process, and the same on every machine.

A session's version is the one its revision 0 names (``SessionStarted.version``), until
a later revision crosses to another one (``Migrated`` or ``VersionContinued``); a rewind
goes back to the version of the revision it restores. Sessions stored before versions
existed have none: they read as :data:`UNKNOWN`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import orjson

from claimfsm._base.record import FACTORY, Record
from claimfsm.engine.errors import ClaimFsmError, ErrorCode
from claimfsm.state.holds import VERSION_KEY
from claimfsm.state.model import Revision, SessionState

if TYPE_CHECKING:  # the read-only commands use this module without loading the machine
    from claimfsm.engine.machine import MachineDef, StateSpec, WaitSpec
    from claimfsm.state.store import StateStore

__all__ = [
    "CROSSINGS",
    "DECLARED_SCHEMAS",
    "UNKNOWN",
    "Migration",
    "OnVersion",
    "VersionMismatch",
    "Versioning",
    "definition_doc",
    "history_version",
    "machine_version",
    "revision_version",
    "schema_digest",
    "session_version",
    "started_version",
]

#: The version of a session stored before versions existed.
UNKNOWN = "unknown"
#: The events that move a session to another version (``{"from", "to"}``).
CROSSINGS = frozenset({"Migrated", "VersionContinued"})

#: Maps a session state of an older version to the state it continues with.
Migration = Callable[[SessionState], SessionState]
#: What a driver does with a session of another version: refuse it (the default),
#: continue it on this definition (one ``VersionContinued`` revision), or ``pass``:
#: run it without a check or an event (replays, which compare behaviour).
OnVersion = Literal["refuse", "continue", "pass"]

SkillId = tuple[str, tuple[tuple[str, str], ...]]

#: The input-schema digests of the built-in wait states' models, declared as the built-in
#: skills declare their versions: computing one builds the model's validator (~11 M
#: instructions of every ``claimfsm step``, which never validates a person's input).
#: ``tests/engine/test_version.py`` checks each against :func:`schema_digest` computed.
DECLARED_SCHEMAS: Mapping[str, str] = {"claimfsm.engine.review.ReviewInput": "b3fd0487462985b4"}


class VersionMismatch(ClaimFsmError):
    """The session started on another version of the machine than the running one."""

    code = ErrorCode.VERSION_MISMATCH


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Versioning(Record, frozen=True):
    """How a driver treats versions: its own ``version``, the ``migrations`` it knows
    (old version -> function) and what it does with another version (``on_version``)."""

    version: str
    migrations: Mapping[str, Migration] = field(default_factory=dict)
    on_version: OnVersion = "refuse"

    def __init__(self, version: str, migrations: Mapping[str, Migration] = FACTORY,
                 on_version: OnVersion = "refuse") -> None:
        self._fill(version=version, migrations={} if migrations is FACTORY else migrations,
                   on_version=on_version)


def _skill_id(bindings: Mapping[str, Any], name: str) -> SkillId:
    declared = getattr(bindings, "declared", None)
    if declared is not None:  # the built-in bindings: known without importing the skill
        version, files = declared(name)
        return str(version), tuple(files)
    sk = bindings[name].skill
    return str(sk.version), tuple(sk.digests)


def schema_digest(model: type[Any], *, declared: bool = True) -> str:
    """16 hex digits of ``model``'s JSON schema (canonical JSON); the built-in models'
    from :data:`DECLARED_SCHEMAS` unless ``declared=False``."""
    known = DECLARED_SCHEMAS.get(f"{model.__module__}.{model.__qualname__}") if declared else None
    if known is not None:
        return known
    schema = model.model_json_schema()
    return hashlib.sha256(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _wait_doc(wait: WaitSpec) -> dict[str, Any]:
    # The input's schema, not its class's identity: a person's input that the new code
    # would validate differently is a change of behaviour.
    return {"input": wait.input_model.__qualname__,
            "schema": schema_digest(wait.input_model),
            "moves": list(wait.moves), "timeout_s": wait.timeout_s,
            "on_timeout": wait.on_timeout}


def _state_doc(s: StateSpec) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": s.name, "skill": s.skill, "final": s.final,
        "retry": {"codes": sorted(s.retry.codes), "max_attempts": s.retry.max_attempts,
                  "backoff_s": s.retry.backoff_s, "factor": s.retry.factor,
                  "cap_s": s.retry.cap_s}}
    if s.wait is not None:  # only then: machines without waits keep their versions
        doc["wait"] = _wait_doc(s.wait)
    return doc


def definition_doc(definition: MachineDef, skills: Mapping[str, SkillId]) -> dict[str, Any]:
    """What the version digests: the definition (a wait state's input schema, moves and
    timeout included) and each bound skill's declarations."""
    doc: dict[str, Any] = {
        "name": definition.name,
        "initial": definition.initial,
        "failure": definition.failure,
        "states": [_state_doc(s) for s in definition.states],
        "transitions": sorted([src, dst] for src, dst in definition.transitions),
        "skills": {name: {"version": v, "files": dict(files)}
                   for name, (v, files) in sorted(skills.items())},
    }
    if definition.editable:
        doc["editable"] = sorted(definition.editable)
    return doc


@functools.lru_cache(maxsize=64)
def _digest(definition: MachineDef, skills: tuple[tuple[str, SkillId], ...]) -> str:
    doc = definition_doc(definition, dict(skills))
    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def machine_version(definition: MachineDef, bindings: Mapping[str, Any]) -> str:
    """The version of ``definition`` run with ``bindings`` (16 hex digits)."""
    names = sorted({s.skill for s in definition.states if s.skill})
    return _digest(definition, tuple((n, _skill_id(bindings, n)) for n in names))


def started_version(events: list[dict[str, Any]]) -> str | None:
    """The version a revision 0's events name (``None``: none, an older session)."""
    for event in events:
        if event.get("type") == "SessionStarted":
            version = event.get("version")
            return version if isinstance(version, str) else None
    return None


def revision_version(rev: Revision) -> str | int | None:
    """What ``rev`` says of its session's version: a version it sets (``str``), a revision
    whose version it restores (``int``, a rewind), or ``None`` (its parent's)."""
    for event in rev.events:
        kind = event.get("type")
        if kind in CROSSINGS and isinstance(event.get("to"), str):
            return str(event["to"])
        if kind == "Rewind" and isinstance(event.get("to"), int):
            return int(event["to"])
    if rev.rev == 0:
        return started_version(rev.events) or UNKNOWN
    return None


def session_version(store: StateStore, head: Revision) -> str:
    """The version the session at ``head`` is on: the one its last crossing set (kept in
    the runtime, which a rewind takes from its target), else the one revision 0 names.
    One read at most, however long the session."""
    said = head.state.runtime.get(VERSION_KEY)
    if isinstance(said, str):
        return said
    first = head if head.rev == 0 else store.get(head.sid, 0)
    return started_version(list(first.events)) or UNKNOWN


def history_version(revisions: Sequence[Revision]) -> str:
    """The version of the session whose history (oldest first, ending at its head) is
    ``revisions``; ``unknown`` when the page holds neither a crossing's mark nor
    revision 0."""
    if not revisions:
        return UNKNOWN
    said = revisions[-1].state.runtime.get(VERSION_KEY)
    if isinstance(said, str):
        return said
    first = revisions[0]
    return (started_version(list(first.events)) or UNKNOWN) if first.rev == 0 else UNKNOWN
