"""Fuzzing the record reader and `claimfsm replay` (hypothesis): mutated sealed records,
edits sealed again, any bytes as a record file, any mode. Nothing may raise but the
reader's errors (BAD_RECORD, RECORD_TAMPERED, INPUT_TOO_LARGE) and, from a replay of a
header whose limits a session refuses, BAD_CONFIG; nothing may print a traceback; a
command exits 0, 1 or 2.

`make test` runs a few dozen examples per target; `make fuzz` (CLAIMFSM_FUZZ=1) 1,000.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claimfsm.cli.main import main
from claimfsm.engine.limits import SessionConfigError
from claimfsm.replay import RecordError, RecordLimits, parse_record, replay_record
from tests.replay.sealing import resealed

FUZZ = os.environ.get("CLAIMFSM_FUZZ") == "1"
EXAMPLES = 1_000 if FUZZ else 40
SLOW = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large]
SESSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
RECORDS = {p.name: p.read_bytes() for p in sorted(SESSIONS.glob("*.jsonl"))}
CODES = {"BAD_RECORD", "RECORD_TAMPERED", "INPUT_TOO_LARGE"}
SMALL = RecordLimits(line_bytes=64 * 1024, lines=200, file_bytes=2**20)


def replayed(data: bytes, mode: Any = "strict") -> None:
    """Read and replay ``data``: a report, one of the reader's errors, or (a resealed
    header whose limits a session refuses) the session's own BAD_CONFIG naming the key,
    which the inspector answers as is and the CLI as a bad record."""
    try:
        record = parse_record(data, limits=SMALL)
    except RecordError as exc:
        assert exc.code in CODES, exc
        return
    try:
        report = replay_record(record, mode)
    except RecordError as exc:
        assert exc.code in CODES, exc
        return
    except SessionConfigError as exc:
        assert str(exc).startswith("config."), exc
        return
    assert report.ok or report.divergence is not None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_byte_level_mutations_of_a_sealed_record(data: st.DataObject) -> None:
    raw = bytearray(RECORDS[data.draw(st.sampled_from(sorted(RECORDS)))])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw)))
        how = data.draw(st.sampled_from(["flip", "insert", "delete", "cut"]))
        if how == "flip" and at < len(raw):
            raw[at] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif how == "delete":
            del raw[at:at + data.draw(st.integers(1, 64))]
        else:
            del raw[at:]
    replayed(bytes(raw), data.draw(st.sampled_from(["strict", "tools"])))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_line_level_mutations_of_a_sealed_record(data: st.DataObject) -> None:
    lines = RECORDS[data.draw(st.sampled_from(sorted(RECORDS)))].splitlines()
    other = RECORDS[data.draw(st.sampled_from(sorted(RECORDS)))].splitlines()
    i = data.draw(st.integers(0, len(lines) - 1))
    how = data.draw(st.sampled_from(["drop", "swap", "duplicate", "foreign"]))
    if how == "drop":
        del lines[i]
    elif how == "swap":
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "duplicate":
        lines.insert(i, lines[i])
    else:
        lines[i] = other[min(i, len(other) - 1)]
    replayed(b"\n".join(lines) + b"\n")


json_leaf = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
             | st.floats(allow_nan=False) | st.text(max_size=30))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_resealed_edits_of_any_field_to_any_value(data: st.DataObject) -> None:
    objs = [orjson.loads(x) for x in RECORDS[data.draw(st.sampled_from(sorted(RECORDS)))]
            .splitlines()]
    obj = objs[data.draw(st.integers(0, len(objs) - 1))]
    holder: Any = obj
    key: Any = data.draw(st.sampled_from(sorted(k for k in obj if k != "sum")))
    while isinstance(holder[key], dict | list) and holder[key] and data.draw(st.booleans()):
        holder = holder[key]
        key = data.draw(st.sampled_from(sorted(holder)) if isinstance(holder, dict)
                        else st.integers(0, len(holder) - 1))
    holder[key] = data.draw(json_leaf | st.lists(json_leaf, max_size=3)
                            | st.dictionaries(st.text(max_size=5), json_leaf, max_size=3))
    replayed(resealed(objs), data.draw(st.sampled_from(["strict", "tools", "live"])))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(content=st.binary(max_size=2000) | st.sampled_from([b"\n" * 50, b"{}\n" * 10,
                                                           b"[" * 5000, bytes(9000)]),
       mode=st.sampled_from(["strict", "tools", "live"]), as_json=st.booleans())
def test_claimfsm_replay_of_any_file_is_a_report_or_a_code(
        tmp_path_factory: Any, content: bytes, mode: str, as_json: bool) -> None:
    work = tmp_path_factory.mktemp("fz")
    path = work / "r.jsonl"
    path.write_bytes(content)
    args = ["replay", str(path), "--mode", mode] + (["--json"] if as_json else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output + result.stderr
    if result.exit_code == 2:
        text = result.stdout if as_json else result.stderr
        code = (orjson.loads(text)["error"]["code"] if as_json
                else text.split(":", 2)[1].strip())
        assert code in CODES


def test_a_resealed_header_with_a_refused_limit_is_a_coded_error(tmp_path: Path) -> None:
    # The case the resealed-edits target found: the record reads, its replay's start
    # refuses the limit, naming it; the CLI reports the file as a bad record.
    objs = [orjson.loads(x) for x in RECORDS["retry.jsonl"].splitlines()]
    objs[0]["config"]["rate_limits"]["search"]["per_seconds"] = None
    data = resealed(objs)
    with pytest.raises(SessionConfigError) as info:
        replay_record(parse_record(data, limits=SMALL), "strict")
    assert info.value.code == "BAD_CONFIG"
    assert str(info.value).startswith("config.rate_limits.search.per_seconds: ")
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    result = CliRunner().invoke(main, ["replay", str(path), "--json"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    error = orjson.loads(result.stdout)["error"]
    assert error["code"] == "BAD_RECORD" and "config.rate_limits.search.per_seconds" in error["msg"]
