"""Replay checks a record's closing line against the replayed session and refuses a
record with no steps."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from claimfsm.replay import RecordError, parse_record, replay_record
from tests.replay.sealing import resealed

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"


def lines(name: str) -> list[bytes]:
    return (FIXTURES / f"{name}.jsonl").read_bytes().splitlines()


def with_end(raw: list[bytes], **change: object) -> bytes:
    """The record with its end line changed and sealed again (a closing line that lies
    from the start, not an edit: that would be RECORD_TAMPERED)."""
    end = orjson.loads(raw[-1])
    assert end["t"] == "end"
    end.update(change)
    return b"\n".join(raw[:-1]) + b"\n" + resealed([end])


@pytest.mark.parametrize("mode", ["strict", "tools"])
def test_a_closing_line_that_lies_about_the_verdict_is_a_divergence(mode: str) -> None:
    raw = lines("supported")
    truth = orjson.loads(raw[-1])
    assert replay_record(parse_record(b"\n".join(raw) + b"\n"), mode=mode).ok  # type: ignore[arg-type]
    other = "REFUTES" if truth["verdict"] != "REFUTES" else "SUPPORTS"
    report = replay_record(parse_record(with_end(raw, verdict=other)), mode=mode)  # type: ignore[arg-type]
    assert not report.ok and report.divergence is not None
    assert report.divergence.kind == "END_MISMATCH" and report.divergence.path == "end.verdict"
    assert report.divergence.expected == other and report.divergence.actual == truth["verdict"]


def test_a_closing_line_with_another_final_state_is_a_divergence() -> None:
    report = replay_record(parse_record(with_end(lines("refuted"), fsm="FAILED")))
    assert report.divergence is not None and report.divergence.path == "end.fsm"
    assert (report.divergence.expected, report.divergence.actual) == ("FAILED", "DONE")


def test_a_record_with_only_a_header_is_refused() -> None:
    header = lines("supported")[0]
    with pytest.raises(RecordError, match="no steps"):
        replay_record(parse_record(header + b"\n"))
