"""The tamper suite: every single-field edit of every shipped record is detected.

An edit of a sealed line is RECORD_TAMPERED before anything runs, naming the line and the
field. An edit sealed again (a forger who knows the seal) is caught by the replay: the
revision chain hashes, the input, the envelopes and the line's own fields are checked
while it runs; only what no replay uses can still change, and that list is fixed here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.replay import RecordError, RecordTampered, parse_record, replay_record
from claimfsm.replay.diff import join_path
from claimfsm.replay.seal import SEAL_KEY
from tests.replay.sealing import resealed

SESSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
RECORDS = sorted(SESSIONS.glob("*.jsonl"))
FULL = os.environ.get("CLAIMFSM_FUZZ") == "1"
# What a forger may change in a resealed line and no strict replay notices: the version
# string of the engine that wrote it, and the header's description of the tool runtime,
# which only a live replay builds its tools from (docs/replay.md says so).
UNCHECKED = ("header.engine", "header.tools")


def edited(value: Any) -> Any:
    """One edit of a leaf value (a timestamp stays a valid one: a second later)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.0
    if isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value)
        except ValueError:
            ts = None
        if ts is not None and ts.tzinfo is not None:
            return (ts + timedelta(seconds=1)).isoformat(timespec="microseconds")
        return value + "x"
    if value is None:
        return "x"
    return [0] if isinstance(value, list) else {"x": 1}


def leaves(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """The path of every scalar and every empty list or object in ``value``."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            yield from leaves(item, (*path, i))
    else:
        yield path


def with_edit(obj: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    copy = orjson.loads(orjson.dumps(obj))
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = edited(holder[path[-1]])
    return copy


def dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for key in path:
        out = join_path(out, key)
    return out


def on_branch(a: str, b: str) -> bool:
    """Whether one path is the other or inside it."""
    def under(x: str, y: str) -> bool:
        return x == y or x.startswith((y + ".", y + "["))
    return under(a, b) or under(b, a)


def edits() -> Iterator[tuple[Path, list[dict[str, Any]], int, tuple[str | int, ...]]]:
    for path in RECORDS:
        objs = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        for n, obj in enumerate(objs):
            for leaf in leaves(obj):
                yield path, objs, n, leaf


def test_the_suite_covers_every_field_of_every_shipped_record() -> None:
    found = list(edits())
    assert {p for p, *_ in found} == set(RECORDS) and len(RECORDS) == 9
    lines = sum(len(p.read_bytes().splitlines()) for p in RECORDS)
    assert len({(p, n) for p, _, n, _ in found}) == lines
    assert len(found) > 6000
    kinds = {(objs[n]["t"], str(leaf[0])) for _, objs, n, leaf in found}
    for field in ("before", "skill", "ts", "runtime", "policy", "calls", "events", "h",
                  SEAL_KEY):
        assert ("step", field) in kinds
    for field in ("engine", "ts", "tools", "config", "h"):
        assert ("header", field) in kinds


def test_every_single_field_edit_is_tampered_naming_line_and_field() -> None:
    missed = []
    for path, objs, n, leaf in edits():
        lines = [orjson.dumps(o) for o in objs]
        lines[n] = orjson.dumps(with_edit(objs[n], leaf))
        try:
            parse_record(b"\n".join(lines) + b"\n", source=path.name)
        except RecordTampered as exc:
            assert exc.code == "RECORD_TAMPERED" and exc.line == n + 1
            assert on_branch(dotted(leaf), exc.field), (path.name, n, leaf, exc.field)
            assert f"{path.name} line {n + 1}: {exc.field}: " in str(exc)
            continue
        missed.append((path.name, n + 1, dotted(leaf)))
    assert missed == []


def test_resealed_edits_are_caught_by_the_replay_but_the_documented_fields() -> None:
    # Every edit under `make fuzz`; every 20th by default (each one is a whole replay).
    survived = set()
    for i, (path, objs, n, leaf) in enumerate(edits()):
        if leaf[0] == SEAL_KEY or (not FULL and i % 20):
            continue
        changed = [*objs[:n], with_edit(objs[n], leaf), *objs[n + 1:]]
        try:
            report = replay_record(parse_record(resealed(changed), source=path.name))
        except RecordError as exc:
            assert exc.code == "BAD_RECORD", exc  # a chain or a field that does not fit
            continue
        if report.ok:
            survived.add(f"{objs[n]['t']}.{dotted(leaf)}")
    assert all(s.startswith(UNCHECKED) for s in survived), sorted(survived)


def test_what_a_resealed_edit_can_still_change_is_what_no_strict_replay_uses() -> None:
    objs = [orjson.loads(x) for x in (SESSIONS / "supported.jsonl").read_bytes().splitlines()]
    objs[0] = {**objs[0], "engine": "9.9.9", "tools": {**objs[0]["tools"], "documents": 1}}
    report = replay_record(parse_record(resealed(objs)))
    assert report.ok and report.verified  # documented: docs/replay.md, "What is checked"


def test_a_forged_chain_hash_is_a_hash_mismatch_at_its_line() -> None:
    objs = [orjson.loads(x) for x in (SESSIONS / "refuted.jsonl").read_bytes().splitlines()]
    objs[4]["h"] = "0" * 64
    with pytest.raises(RecordTampered) as info:
        parse_record(b"".join(orjson.dumps(o) + b"\n" for o in objs))
    assert (info.value.line, info.value.field) == (5, "h")
    report = replay_record(parse_record(resealed(objs)))
    d = report.divergence
    assert d is not None and (d.kind, d.line, d.path) == ("HASH_MISMATCH", 5, "h")
    assert d.expected == "0" * 64 and d.actual != d.expected


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda raw: raw.replace(b'","', b'", "', 1), "(line)"),       # bytes between values
        (lambda raw: raw[: raw.rindex(b',"sum"')] + b"}", SEAL_KEY),  # the seal removed
        (lambda raw: raw[:-3] + b'0"}', SEAL_KEY),                    # the seal edited
        (lambda raw: raw[:-1] + b',"x":1}', "x"),                     # a key after the seal
    ],
)
def test_edits_outside_the_values_are_tampered(change: Any, field: str) -> None:
    raw = (SESSIONS / "supported.jsonl").read_bytes().splitlines()
    raw[2] = change(raw[2])
    with pytest.raises(RecordTampered) as info:
        parse_record(b"\n".join(raw) + b"\n")
    assert (info.value.line, info.value.field) == (3, field)


def test_a_line_dropped_from_a_sealed_record_is_a_bad_record() -> None:
    raw = (SESSIONS / "retry.jsonl").read_bytes().splitlines()
    for i in range(1, len(raw) - 1):
        with pytest.raises(RecordError) as info:
            replay_record(parse_record(b"\n".join(raw[:i] + raw[i + 1:]) + b"\n"))
        assert info.value.code == "BAD_RECORD"
