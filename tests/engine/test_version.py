"""Versioned machines: the version digest, sessions pinned to it, migrations, registered
older versions, ``--on-version continue`` and sessions older than versions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import claimfsm
from claimfsm.engine.api import define_machine
from claimfsm.engine.bindings import DEFAULT_BINDINGS
from claimfsm.engine.errors import MachineMismatch
from claimfsm.engine.machine import DEFAULT_MACHINE, RetryPolicy
from claimfsm.engine.version import (
    DECLARED_SCHEMAS,
    UNKNOWN,
    VersionMismatch,
    machine_version,
    schema_digest,
    session_version,
)
from claimfsm.replay import replay_record
from claimfsm.replay.write import export_record
from claimfsm.skills import versions
from claimfsm.skills.context import FixedClock
from claimfsm.state.fsck import fsck
from claimfsm.state.memory import MemoryStore
from tests.support.versions import V1, V2, _a, _b, v2_with

ROOT = Path(__file__).resolve().parents[2]


def _at_b(store: MemoryStore, sid: str = "s1") -> str:
    d = V1.driver(store, clock=FixedClock(), new_sid=lambda: sid)
    d.start("claim")
    assert d.step(sid).after == "B"
    return sid


def test_the_version_is_the_same_in_another_process() -> None:
    code = ("from claimfsm.engine.runtime import Engine; import claimfsm; "
            "from tests.support.versions import V2; "
            "print(Engine.open(None).driver.version, V2.version)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, env={"PYTHONHASHSEED": "123", "PATH": ""})
    here = machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS)
    assert out.stdout.split() == [here, V2.version]
    assert len(here) == 16 and int(here, 16) >= 0


def test_the_version_digests_the_definition_and_declared_skill_versions() -> None:
    again = define_machine("versioned", states={"A": _a, "B": _b, "DONE": None},
                           transitions=[("A", "B"), ("B", "DONE")])
    assert again.version == V1.version  # content, not object identity
    assert claimfsm.Workflow is type(V1)
    retry = define_machine("versioned", states={"A": _a, "B": _b, "DONE": None},
                           transitions=[("A", "B"), ("B", "DONE")],
                           retry={"B": RetryPolicy(max_attempts=5)})
    bumped = define_machine(
        "versioned", states={"A": _a, "B": claimfsm.skill("b", version="2")(_b.handler),
                             "DONE": None},
        transitions=[("A", "B"), ("B", "DONE")])
    prompt = define_machine(
        "versioned", states={"A": _a, "B": claimfsm.skill("b", digests={"prompt": "ab"})(
            _b.handler), "DONE": None},
        transitions=[("A", "B"), ("B", "DONE")])
    assert len({V1.version, retry.version, bumped.version, prompt.version, V2.version}) == 5


def test_built_in_skills_declare_their_versions_and_files(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    from claimfsm.skills.registry import all_skills

    for name, sk in all_skills().items():
        if name in versions.SKILL_VERSIONS:
            assert sk.version == versions.SKILL_VERSIONS[name], name
    before = machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS)
    monkeypatch.setitem(versions.SKILL_VERSIONS, "verdict_aggregate", "999")
    bumped = machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS)
    monkeypatch.setitem(versions.SKILL_VERSIONS, "verdict_aggregate", "1")
    # A file the skill reads: its contents, not its path, are in the version.
    monkeypatch.setitem(versions.SKILL_FILES, "stance_judge", ("cards/stance_judge.md",))
    with_file = machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS)
    assert len({before, bumped, with_file}) == 3


def test_declared_wait_schemas_are_the_schemas_pydantic_generates(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A built-in wait state's input model changed: update DECLARED_SCHEMAS (the machine's
    # version changes with it, as it did when the digest was computed at every open).
    import importlib

    for path, digest in DECLARED_SCHEMAS.items():
        module, name = path.rsplit(".", 1)
        model = getattr(importlib.import_module(module), name)
        assert schema_digest(model, declared=False) == digest, path
        assert schema_digest(model) == digest
    waits = {f"{s.wait.input_model.__module__}.{s.wait.input_model.__qualname__}"
             for s in DEFAULT_MACHINE.states if s.wait is not None}
    assert waits and waits <= set(DECLARED_SCHEMAS)
    # The declared digest is the one in the version: another one moves it.
    before = machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS)
    from claimfsm.engine import version

    version._digest.cache_clear()
    monkeypatch.setitem(version.DECLARED_SCHEMAS, sorted(waits)[0], "0" * 16)
    assert machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS) != before
    version._digest.cache_clear()


def test_revision_0_stores_the_version_and_a_session_keeps_it() -> None:
    store = MemoryStore()
    d = V1.driver(store, clock=FixedClock())
    first = d.start("claim")
    assert first.events == [{"type": "SessionStarted", "version": V1.version}]
    head = d.run(first.sid)
    assert head.fsm == "DONE" and session_version(store, head) == V1.version


def test_another_version_is_refused_naming_both() -> None:
    store = MemoryStore()
    sid = _at_b(store)
    strict = v2_with({})
    with pytest.raises(MachineMismatch):  # in B, which version 2 lacks: its state is gone
        strict.driver(store).step(sid)
    store2 = MemoryStore()
    d1 = V1.driver(store2, clock=FixedClock(), new_sid=lambda: "s2")
    d1.start("claim")  # at A, which version 2 has too
    with pytest.raises(VersionMismatch) as info:
        strict.driver(store2).step("s2")
    assert info.value.code == "VERSION_MISMATCH"
    assert V1.version in info.value.msg and strict.version in info.value.msg
    assert store2.head("s2").rev == 0  # nothing committed


def test_on_version_continue_is_one_recorded_revision() -> None:
    store = MemoryStore()
    d1 = V1.driver(store, clock=FixedClock(), new_sid=lambda: "s1")
    d1.start("claim")
    d2 = v2_with({}).driver(store, clock=FixedClock(), on_version="continue")
    crossed = d2.step("s1")
    assert crossed.skill == "migrate" and crossed.committed
    rev = store.head("s1")
    assert rev.events == [{"type": "VersionContinued", "from": V1.version,
                           "to": d2.version}]
    assert session_version(store, rev) == d2.version
    assert d2.run("s1").fsm == "DONE"
    assert [r.skill for r in store.history("s1")] == [None, "migrate", "a", "c"]
    assert store.head("s1").state.memory == {"a": 1, "c": 1}


def test_a_migration_crosses_once_and_the_session_replays() -> None:
    store = MemoryStore()
    sid = _at_b(store)
    d2 = V2.driver(store, clock=FixedClock())
    head = d2.run(sid)
    hist = store.history(sid)
    assert head.fsm == "DONE" and head.state.memory == {"a": 1, "migrated": 1, "c": 1}
    migrated = [r for r in hist if any(e["type"] == "Migrated" for e in r.events)]
    assert len(migrated) == 1 and migrated[0].fsm == "C"
    assert migrated[0].state.entry_rev == migrated[0].rev
    assert migrated[0].events[0] == {"type": "Migrated", "from": V1.version,
                                     "to": V2.version}
    assert fsck(store).ok
    record = export_record(store, sid, tools=None, bindings=V2.bindings,
                           machine="versioned", finals=V2.definition.finals)
    assert record.header.version == V1.version
    from claimfsm.engine.version import Versioning

    report = replay_record(record, "strict", machine=V2.definition, bindings=V2.bindings,
                           versioning=Versioning(V2.version, V2.migrations),
                           registered=[(V1.definition, V1.bindings)])
    assert report.ok, report.divergence
    # Without version 1 registered, its steps are replayed by version 2's code: they
    # decide otherwise, and the replay says where.
    plain = replay_record(record, "strict", machine=V2.definition, bindings=V2.bindings,
                          versioning=Versioning(V2.version, V2.migrations))
    assert not plain.ok and plain.divergence is not None
    assert plain.divergence.path == "d.sp.fsm"


def test_a_failing_migration_commits_nothing() -> None:
    store = MemoryStore()
    sid = _at_b(store)

    def broken(state: object) -> object:
        raise ValueError("no")

    d2 = v2_with({V1.version: broken}).driver(store, clock=FixedClock())
    result = d2.step(sid)
    assert result.envelope.e is not None and result.envelope.e.code == "MIGRATION_FAILED"
    assert not result.committed and store.head(sid).rev == 1
    gone = v2_with({V1.version: lambda s: s}).driver(store, clock=FixedClock())
    result = gone.step(sid)  # leaves the session in B, which version 2 lacks
    assert result.envelope.e is not None and "fsm: 'B'" in result.envelope.e.msg


def test_a_registered_older_version_runs_its_own_sessions() -> None:
    store = MemoryStore()
    sid = _at_b(store)
    d = v2_with({}).driver(store, clock=FixedClock(), registered=[V1])
    head = d.run(sid)
    assert head.fsm == "DONE" and head.state.memory == {"a": 1, "b": 1}
    assert session_version(store, head) == V1.version
    fresh = d.start("new")  # new sessions start on the newest version
    assert d.run(fresh.sid).state.memory == {"a": 1, "c": 1}


def test_a_rewind_past_the_migration_returns_to_the_old_version() -> None:
    store = MemoryStore()
    sid = _at_b(store)
    d2 = V2.driver(store, clock=FixedClock())
    d2.step(sid)  # the migration, rev 2
    assert session_version(store, store.head(sid)) == V2.version
    d2.rollback(sid, 1)
    assert session_version(store, store.head(sid)) == V1.version
    d2.run(sid)  # migrates again, from the restored old state
    assert store.head(sid).fsm == "DONE"


def test_sessions_older_than_versions_run_as_unknown() -> None:
    store = MemoryStore()
    d1 = V1.driver(store, clock=FixedClock(), new_sid=lambda: "old")
    first = d1.start("claim", version=UNKNOWN)
    assert first.events == [{"type": "SessionStarted"}]  # as revision 0 always was
    assert session_version(store, first) == UNKNOWN
    d2 = v2_with({}).driver(store, clock=FixedClock())
    assert d2.run("old").fsm == "DONE"  # never refused: it has no version to differ
    assert fsck(store).ok
