"""Records of sessions people took part in: the export carries a ``person`` line per
input, edit and resume; strict replay feeds them at the same revisions and reproduces
the session byte for byte; an edited input line is RECORD_TAMPERED, and one sealed again
is a divergence naming its line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine
from claimfsm.replay.errors import RecordTampered
from claimfsm.replay.record import parse_record
from claimfsm.replay.runner import replay_record
from claimfsm.replay.write import engine_tools, export_record
from claimfsm.state.memory import MemoryStore
from tests.replay.sealing import resealed

CLAIM = "NASA landed on the Moon in 1969."


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[Any]]:
    db = str(tmp_path_factory.mktemp("people") / "p.db")
    profile = Profile(review="always", pause_before=("VERIFY",))
    with Engine.open(db, config=EngineConfig(profile=profile)) as eng:
        d = eng.driver
        sid = eng.start(CLAIM).sid
        head = d.run(sid)
        d.edit(sid, [("evidence.s1", head.state.evidence["s1"][:1])], actor="eve")
        d.resume(sid, actor="eve")
        d.run(sid)
        d.input(sid, {"decision": "send_back", "queries": ["Apollo 11"], "reason": "more"},
                actor="ann")
        d.run(sid)
        d.resume(sid, actor="ann")
        d.run(sid)
        d.input(sid, {"decision": "override", "verdict": "REFUTES", "reason": "no"},
                actor="ann")
        data = export_record(eng.store, sid, tools=engine_tools(eng)).to_bytes()
        revisions = list(eng.store.history(sid))
    return data, revisions


def _objs(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines()]


def test_the_export_has_a_person_line_per_input_edit_and_resume(
        recorded: tuple[bytes, list[Any]]) -> None:
    data, _ = recorded
    people = [(o["act"], o["actor"], o["before"], o["after"])
              for o in _objs(data) if o["t"] == "person"]
    assert people == [("edit", "eve", "VERIFY", "VERIFY"), ("resume", "eve", "VERIFY", "VERIFY"),
                      ("input", "ann", "REVIEW", "RETRIEVAL"),
                      ("resume", "ann", "VERIFY", "VERIFY"), ("input", "ann", "REVIEW", "DONE")]
    assert _objs(data)[-1]["t"] == "end" and _objs(data)[-1]["verdict"] == "REFUTES"


def test_strict_replay_reproduces_every_revision(recorded: tuple[bytes, list[Any]]) -> None:
    data, revisions = recorded
    store = MemoryStore()
    report = replay_record(parse_record(data), mode="strict", store=store)
    assert report.ok and report.verified, report.divergence
    again = store.history(revisions[0].sid)
    assert [r.model_dump_json() for r in again] == [r.model_dump_json() for r in revisions]


def test_an_edited_input_line_is_tampered(recorded: tuple[bytes, list[Any]]) -> None:
    data, _ = recorded
    lines = data.splitlines()
    n = next(i for i, line in enumerate(lines) if b'"override"' in line)
    lines[n] = lines[n].replace(b'"reason":"no"', b'"reason":"yes"')
    with pytest.raises(RecordTampered) as exc:
        parse_record(b"\n".join(lines) + b"\n", source="r.jsonl")
    assert exc.value.line == n + 1


def test_a_resealed_input_line_is_a_divergence_naming_it(
        recorded: tuple[bytes, list[Any]], tmp_path: Path) -> None:
    data, _ = recorded
    objs = _objs(data)
    n = next(i for i, o in enumerate(objs) if o["t"] == "person" and o["act"] == "input")
    objs[n]["payload"]["queries"] = ["something else"]
    report = replay_record(parse_record(resealed(objs)), mode="strict")
    assert not report.ok and report.divergence is not None
    assert (report.divergence.line, report.divergence.kind) == (n + 1, "HASH_MISMATCH")


def test_a_refused_input_line_is_a_divergence(recorded: tuple[bytes, list[Any]]) -> None:
    data, _ = recorded
    objs = _objs(data)
    n = next(i for i, o in enumerate(objs) if o["t"] == "person" and o["act"] == "input")
    objs[n]["payload"] = {"decision": "override"}  # no verdict, no reason
    report = replay_record(parse_record(resealed(objs)), mode="strict")
    assert report.divergence is not None
    assert (report.divergence.line, report.divergence.kind) == (n + 1, "COMMIT_MISMATCH")
    assert report.divergence.actual == "BAD_INPUT"
