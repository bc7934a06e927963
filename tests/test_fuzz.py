"""Fuzzing with hypothesis: every skill, `claimfsm skill`, the CLI with hostile arguments
and files, the ingest reader and the replay reader. Nothing may raise or print a
traceback; the answer is an envelope or a clean error code, and a rejected or reading
command leaves the database byte for byte as it was.

`make test` runs a few dozen to a few hundred examples per target; `make fuzz` sets
CLAIMFSM_FUZZ=1 for 10,000 per skill and 1,000 per CLI target.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimfsm import ErrorCode
from claimfsm.cli.main import main
from claimfsm.replay import RecordError, parse_record, replay_record
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.registry import all_skills

FUZZ = os.environ.get("CLAIMFSM_FUZZ") == "1"
SKILL_EXAMPLES = 10_000 if FUZZ else 150
CLI_EXAMPLES = 1_000 if FUZZ else 40
CLI_COMMAND_EXAMPLES = 1_000 if FUZZ else 12
SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large]

json_leaf = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
             | st.floats(allow_nan=False) | st.text(max_size=60))
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                          max_leaves=20)
claim_text = st.text(st.characters(codec="utf-8"), min_size=0, max_size=300)
st_ref = st.fixed_dictionaries({"sid": st.text(max_size=20), "rev": st.integers(-5, 2**65),
                                "fsm": st.sampled_from(["PARSE_CLAIM", "VERIFY", ""])})
near_valid = st.fixed_dictionaries({
    "claim": claim_text, "st": st_ref,
    "claims": st.lists(st.fixed_dictionaries({"id": st.text(max_size=4), "c": claim_text}),
                       max_size=4),
    "judgments": st.lists(json_value, max_size=3),
    "plans": st.lists(json_value, max_size=3),
    "evidence": st.dictionaries(st.text(max_size=3), st.lists(json_value, max_size=2),
                                max_size=2),
}).map(lambda d: {k: v for k, v in d.items() if hash(k) % 3})


def check(env: Envelope) -> None:
    assert isinstance(env, Envelope)
    body = orjson.loads(env.to_json())  # always serialisable
    assert body["s"] in {"ok", "error", "retry"}
    if body["s"] != "ok":
        # The library's own skills answer only with its stable codes.
        assert body["e"]["code"] in ErrorCode.__members__ and body["e"]["msg"]


@pytest.mark.parametrize("name", sorted(all_skills()))
@settings(max_examples=SKILL_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(raw=json_value | near_valid)
def test_every_skill_answers_any_json_with_an_envelope(name: str, raw: Any) -> None:
    check(all_skills()[name].run(orjson.dumps(raw, option=orjson.OPT_NON_STR_KEYS)
                                 if _dumpable(raw) else raw, SkillContext()))


def _dumpable(raw: Any) -> bool:
    try:
        orjson.dumps(raw)
    except TypeError:
        return False  # integers beyond 64 bits: handed over as Python objects instead
    return True


@pytest.mark.parametrize("name", sorted(all_skills()))
@settings(max_examples=SKILL_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(raw=st.binary(max_size=200))
def test_every_skill_answers_any_bytes(name: str, raw: bytes) -> None:
    check(all_skills()[name].run(raw, SkillContext()))


@settings(max_examples=CLI_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(name=st.sampled_from([*sorted(all_skills()), "nope", ""]), raw=st.binary(max_size=200))
def test_claimfsm_skill_never_raises(name: str, raw: bytes) -> None:
    res = CliRunner().invoke(main, ["skill", name], input=raw)
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert res.exit_code in (0, 1)
    orjson.loads(res.stdout_bytes)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("fuzz") / "seed.db"
    res = CliRunner().invoke(main, ["start", "Water boils at 100 degrees.", "--db", str(db)])
    assert res.exit_code == 0
    return db, res.output.strip()


READING = ("show", "history", "export", "fsck")
COMMANDS = (*READING, "step", "rollback", "fork", "compact", "start", "verify", "ingest",
            "replay", "diagram")
hostile = st.one_of(st.text(st.characters(codec="utf-8"), max_size=40),
                    st.sampled_from(["-1", "nan", "inf", "1e309", "99999999999999999999",
                                     "--json", "--rev", "--to", "--at", "", "\x00", "../x"]))


@pytest.mark.parametrize("cmd", COMMANDS)
@settings(max_examples=CLI_COMMAND_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(args=st.lists(hostile, max_size=4), file_bytes=st.none() | st.binary(max_size=64))
def test_cli_commands_with_hostile_arguments_and_files(
        seeded: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory, cmd: str,
        args: list[str], file_bytes: bytes | None) -> None:
    work = tmp_path_factory.mktemp("cmd")
    db = work / "db.db"
    if file_bytes is None:
        shutil.copy(seeded[0], db)
    else:
        db.write_bytes(file_bytes)
    before = db.read_bytes()
    argv = [cmd, *[seeded[1] if a == "SID" else a for a in args], "--db", str(db)]
    res = CliRunner().invoke(main, argv)
    assert res.exception is None or isinstance(res.exception, SystemExit), (argv, res.exception)
    assert res.exit_code in (0, 1, 2), (argv, res.output)
    assert "Traceback" not in res.output
    if res.exit_code == 2 or cmd in READING:
        assert db.read_bytes() == before, argv


@settings(max_examples=CLI_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(lines=st.lists(st.binary(max_size=80) | json_value.map(lambda v: json.dumps(v).encode()),
                      max_size=6))
def test_ingest_reader_reports_bad_lines_and_never_raises(
        tmp_path_factory: pytest.TempPathFactory, lines: list[bytes]) -> None:
    work = tmp_path_factory.mktemp("ing")
    docs = work / "docs.jsonl"
    docs.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n")
    res = CliRunner().invoke(main, ["ingest", str(docs), "--db", str(work / "i.db"), "--json"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    body = orjson.loads(res.output)
    assert res.exit_code == 0 and body["added"] + len(body["errors"]) == body["lines"]


FIXTURE = (Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
           / "supported.jsonl").read_bytes().splitlines()


@settings(max_examples=CLI_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_replay_reader_refuses_or_reports_any_mutation(data: st.DataObject) -> None:
    lines = list(FIXTURE)
    i = data.draw(st.integers(0, len(lines) - 1))
    how = data.draw(st.sampled_from(["drop", "garble", "swap", "truncate"]))
    if how == "drop":
        del lines[i]
    elif how == "garble":
        lines[i] = data.draw(st.binary(max_size=40))
    elif how == "swap":
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
    raw = b"\n".join(lines) + b"\n"
    try:
        report = replay_record(parse_record(raw))
    except RecordError as exc:
        assert exc.code == "BAD_RECORD"
        return
    assert report.ok or report.divergence is not None
