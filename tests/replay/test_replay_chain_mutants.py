"""Replay's checks of record format 2, field by field: the chain hash of every revision
(``HASH_MISMATCH`` at the header, a step and a rewind; never in live mode), what a line
says its step was (``STEP_MISMATCH``), the policy and runtime the step left
(``STATE_MISMATCH``), and the report's ``format`` and ``verified``. Each divergence is
asserted whole (kind, line, step, state, skill, path, expected, actual): they are what
``claimfsm replay --json`` prints. These tests kill the mutants of fsm/replay/runner.py
and compare.py that the record-format work added (`make mutate`, docs/testing.md).

The records are exported from stored sessions of tests/support/walk.py's machine, as
``claimfsm export`` builds them (a chain hash on every line); an edited line is sealed
again where the test reads it back from bytes, so the reader's seal check passes and the
replay's own checks are what must catch it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest

from claimfsm.replay import replay_record
from claimfsm.replay.diff import ABSENT
from claimfsm.replay.record import Record, Rewind, Step, parse_record
from claimfsm.replay.write import export_record
from claimfsm.testing import scripted_driver
from tests.replay.sealing import resealed
from tests.replay.test_replay_outcome_mutants import broken_once
from tests.support.walk import Behaviour, bindings, div, loops, walk

WRONG = "0" * 64


def exported(work: Behaviour, *, rewind: bool = False) -> Record:
    """The record ``claimfsm export`` gives of a walk session run with ``work``
    (``rewind``: the session failed, was rewound to revision 0 with reopen, and finished)."""
    live = bindings(work)
    driver = scripted_driver(walk(), bindings=live)
    sid = driver.start("a claim").sid
    driver.run(sid)
    if rewind:
        driver.rollback(sid, 0, reopen=True)
        driver.run(sid)
    return export_record(driver.store, sid, tools=None, bindings=live, machine="walk",
                         finals=walk().finals)


def with_entry(rec: Record, i: int, **update: Any) -> Record:
    entries = list(rec.entries)
    entries[i] = entries[i].model_copy(update=update)
    return replace(rec, entries=tuple(entries))


def as_read(rec: Record) -> Record:
    """``rec`` written and read back as a file is (every line sealed, so verified)."""
    objs = [orjson.loads(line) for line in rec.to_bytes().splitlines()]
    return parse_record(resealed(objs), source="walk.jsonl")


# -- the report says what was verified -----------------------------------------------------


def test_a_read_format_2_record_is_verified_and_replays_clean() -> None:
    rec = as_read(exported(loops(3)))
    assert rec.verified and rec.header.h is not None
    assert all(entry.h is not None for entry in rec.entries)
    report = replay_record(rec, machine=walk(), bindings=bindings(loops(3)))
    assert report.ok and (report.format, report.verified) == (2, True)


def test_a_format_1_record_replays_unverified() -> None:
    rec = exported(loops(3))
    old = Record(header=rec.header.model_copy(update={"format": 1, "h": None}),
                 entries=tuple(e.model_copy(update={"h": None}) for e in rec.entries),
                 end=rec.end, source="old.jsonl")
    report = replay_record(old, machine=walk(), bindings=bindings(loops(3)))
    assert report.ok and (report.format, report.verified) == (1, False)


# -- chain hashes ------------------------------------------------------------------------


def test_a_wrong_hash_of_revision_0_is_a_hash_mismatch_at_the_header() -> None:
    rec = exported(loops(3))
    assert rec.header.h is not None
    bad = as_read(replace(rec, header=rec.header.model_copy(update={"h": WRONG})))
    for mode in ("strict", "tools"):
        report = replay_record(bad, mode, machine=walk(), bindings=bindings(loops(3)))
        assert report.divergence == div(0, "WORK", None, "HASH_MISMATCH", "h", WRONG,
                                        rec.header.h), mode


def test_a_wrong_hash_of_a_step_is_a_hash_mismatch_at_its_line() -> None:
    rec = exported(loops(3))
    right = rec.entries[1].h
    bad = as_read(with_entry(rec, 1, h=WRONG))
    report = replay_record(bad, machine=walk(), bindings=bindings(loops(3)))
    assert report.divergence == div(2, "WORK", "work", "HASH_MISMATCH", "h", WRONG, right)
    # The session still runs to its end, as recorded: only the chain broke.
    assert report.actual == report.expected and not report.verdict_changed


def test_a_wrong_hash_of_a_rewind_is_a_hash_mismatch_at_its_line() -> None:
    rec = exported(broken_once(), rewind=True)
    at = next(i for i, e in enumerate(rec.entries) if isinstance(e, Rewind))
    right = rec.entries[at].h
    bad = with_entry(rec, at, h=WRONG)
    report = replay_record(bad, machine=walk(), bindings=bindings(broken_once()))
    assert report.divergence == div(at + 1, "FAILED", None, "HASH_MISMATCH", "h", WRONG,
                                    right)


def test_live_mode_checks_no_chain_hashes() -> None:
    # Live tools make other events, so another chain: a live replay never compares them.
    rec = exported(loops(3))
    bad = as_read(with_entry(replace(rec, header=rec.header.model_copy(update={"h": WRONG})),
                             1, h=WRONG))
    assert replay_record(bad, "live", machine=walk(), bindings=bindings(loops(3))).ok
    assert not replay_record(bad, "strict", machine=walk(), bindings=bindings(loops(3))).ok


def test_lines_without_hashes_are_not_chain_checked() -> None:
    rec = exported(loops(3))
    bare = Record(header=rec.header.model_copy(update={"h": None}),
                  entries=tuple(e.model_copy(update={"h": None}) for e in rec.entries),
                  end=rec.end)
    assert replay_record(bare, machine=walk(), bindings=bindings(loops(3))).ok


# -- what a line says its step was -------------------------------------------------------


def test_a_line_from_another_state_is_a_step_mismatch_on_before() -> None:
    rec = exported(loops(3))
    bad = with_entry(rec, 1, before="CHECK")
    report = replay_record(bad, machine=walk(), bindings=bindings(loops(3)))
    assert report.divergence == div(2, "WORK", "work", "STEP_MISMATCH", "before", "CHECK",
                                    "WORK")


def test_a_state_bound_to_another_skill_is_a_step_mismatch_on_skill() -> None:
    rec = exported(loops(3))
    machine = walk()
    renamed = replace(machine, states=tuple(
        replace(s, skill="labour") if s.name == "WORK" else s for s in machine.states))
    live = {**bindings(loops(3)), "labour": bindings(loops(3))["work"]}
    report = replay_record(rec, machine=renamed, bindings=live)
    assert report.divergence == div(1, "WORK", "work", "STEP_MISMATCH", "skill", "work",
                                    "labour")


# -- the policy and runtime a step left ----------------------------------------------------


@pytest.mark.parametrize("name", ["policy", "runtime"])
def test_another_policy_or_runtime_is_a_state_mismatch_at_its_path(name: str) -> None:
    rec = exported(loops(3))
    step = rec.entries[1]
    assert isinstance(step, Step)
    actual = getattr(step, name)
    assert isinstance(actual, dict) and "audit" not in actual
    bad = with_entry(rec, 1, **{name: {**actual, "audit": 1}})
    report = replay_record(bad, machine=walk(), bindings=bindings(loops(3)))
    assert report.divergence == div(2, "WORK", "work", "STATE_MISMATCH", f"{name}.audit",
                                    1, ABSENT)


def test_a_step_line_without_policy_and_runtime_leaves_them_unchecked() -> None:
    rec = exported(loops(3))
    bare = replace(rec, entries=tuple(e.model_copy(update={"policy": None, "runtime": None})
                                      for e in rec.entries))
    assert replay_record(bare, machine=walk(), bindings=bindings(loops(3))).ok
