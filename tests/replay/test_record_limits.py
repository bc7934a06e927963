"""Records are read within limits, one line at a time: a line, the file, the number of
lines, a folder's depth and count; devices and FIFOs are refused before a byte is read;
`claimfsm replay` holds neither the file nor every revision, so its memory stays flat."""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.driver import Driver
from claimfsm.engine.runtime import DEFAULT_FALLBACKS, seed_demo
from claimfsm.replay import (
    RecordError,
    RecordLimits,
    RecordTooLarge,
    open_record,
    parse_record,
    read_record,
    replay_record,
)
from claimfsm.replay.source import find_records
from claimfsm.replay.store import ReplayStore
from claimfsm.replay.tools import runtime_from_info
from claimfsm.replay.write import export_record, tools_info
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.state.errors import UnknownRevision
from claimfsm.state.memory import MemoryStore

SESSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
SUPPORTED = (SESSIONS / "supported.jsonl").read_bytes()
LONGEST = max(len(line) for line in SUPPORTED.splitlines())
LINES = len(SUPPORTED.splitlines())


def test_a_line_exactly_at_the_limit_is_read_and_one_byte_more_is_refused() -> None:
    assert parse_record(SUPPORTED, limits=RecordLimits(line_bytes=LONGEST)).verified
    with pytest.raises(RecordTooLarge) as info:
        parse_record(SUPPORTED, source="s.jsonl", limits=RecordLimits(line_bytes=LONGEST - 1))
    err = info.value
    assert err.code == "INPUT_TOO_LARGE" and err.line is not None
    assert f"s.jsonl line {err.line}: a line over {LONGEST - 1:,} bytes" in str(err)
    assert len(SUPPORTED.splitlines()[err.line - 1]) == LONGEST


def test_the_number_of_lines_and_the_file_size_are_limited_exactly() -> None:
    assert parse_record(SUPPORTED, limits=RecordLimits(lines=LINES)).summary.steps == LINES - 2
    with pytest.raises(RecordTooLarge, match=f"line {LINES}: more than {LINES - 1:,} lines"):
        parse_record(SUPPORTED, limits=RecordLimits(lines=LINES - 1))
    assert parse_record(SUPPORTED, limits=RecordLimits(file_bytes=len(SUPPORTED))).verified
    with pytest.raises(RecordTooLarge, match=f"{len(SUPPORTED):,} bytes, over the limit"):
        parse_record(SUPPORTED, limits=RecordLimits(file_bytes=len(SUPPORTED) - 1))


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as fh:
        fh.truncate(2**20)  # sparse: nothing to read, only its size
    with pytest.raises(RecordTooLarge, match="1,048,576 bytes, over the limit of 1,000"):
        read_record(big, RecordLimits(file_bytes=1000))


def test_a_file_with_no_line_end_stops_at_the_line_limit(tmp_path: Path) -> None:
    zeros = tmp_path / "zeros.jsonl"
    zeros.write_bytes(bytes(5000))
    with pytest.raises(RecordTooLarge, match="line 1: a line over 4,096 bytes"):
        open_record(zeros, RecordLimits(line_bytes=4096))


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused_before_a_byte_is_read(device: str) -> None:
    with pytest.raises(RecordError, match="not a regular file") as info:
        open_record(device)
    assert info.value.code == "BAD_RECORD"
    result = CliRunner().invoke(main, ["replay", device])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"error: BAD_RECORD: {device}: not a regular file" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_a_fifo_without_a_writer_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "r.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RecordError, match="not a regular file"):
        read_record(fifo)


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[Path]:
    """A record 1,200 folders down (what makes a recursive search overflow the stack),
    removed bottom-up after the test (a recursive removal would overflow too)."""
    top = tmp_path / "deep"
    here = str(top)
    os.mkdir(here)
    for _ in range(1200):
        here += "/d"
        os.mkdir(here)
    Path(here, "r.jsonl").write_bytes(SUPPORTED)
    yield top
    os.remove(Path(here, "r.jsonl"))
    while here != str(top.parent):
        os.rmdir(here)
        here = os.path.dirname(here)


def test_folders_are_searched_within_depth_and_count(tmp_path: Path, deep: Path) -> None:
    with pytest.raises(RecordTooLarge, match="folders nested deeper than 32"):
        find_records(deep)
    result = CliRunner().invoke(main, ["replay", str(deep)])
    assert result.exit_code == 2 and "error: INPUT_TOO_LARGE:" in result.stderr
    assert "Traceback" not in result.output + result.stderr
    flat = tmp_path / "flat"
    flat.mkdir()
    for i in range(3):
        (flat / f"{i}.jsonl").write_bytes(SUPPORTED)
    assert len(find_records(flat, max_files=3)) == 3
    with pytest.raises(RecordTooLarge, match="more than 2 records"):
        find_records(flat, max_files=2)
    assert len(find_records(tmp_path / "flat", max_depth=0)) == 3


def test_a_symlinked_folder_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "r.jsonl").write_bytes(SUPPORTED)
    (tmp_path / "a" / "loop").symlink_to(tmp_path / "a")
    assert find_records(tmp_path / "a") == [tmp_path / "a" / "r.jsonl"]


def test_a_record_changed_between_the_two_reads_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(SUPPORTED)
    with open_record(path) as record:
        with path.open("r+b") as fh:  # same length, other bytes: still a valid record
            fh.write(SUPPORTED.replace(b'"engine":"', b'"engine":"X', 1)[:len(SUPPORTED)])
        with pytest.raises(RecordError):
            replay_record(record)


def test_a_record_file_replays_like_the_record_in_memory() -> None:
    for path in sorted(SESSIONS.glob("*.jsonl")):
        with open_record(path) as streamed:
            for mode in ("strict", "tools"):
                assert replay_record(streamed, mode) == replay_record(read_record(path), mode)


@pytest.fixture(scope="module")
def long_records(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, Path]]:
    """Records of one session rewound and run again 10 and 40 times (every rewind goes
    back to the revision before EXTRACT)."""
    out = tmp_path_factory.mktemp("long")
    with EvidenceIndex.open(":memory:") as index:
        seed_demo(index)
        info = tools_info(documents=index.count_documents(), facts=index.count_facts(),
                          fallbacks=DEFAULT_FALLBACKS)
        store = MemoryStore()
        driver = Driver(store, tools=runtime_from_info(index, info),
                        clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
        driver.start("NASA landed on the Moon in 1969.", sid="long")
        driver.run("long")
        back = next(r.rev for r in store.history("long") if r.fsm == "EXTRACT") - 1
        paths = {}
        for cycles in (10, 40):
            while sum(r.skill == "rewind" for r in store.history("long")) < cycles:
                driver.rollback("long", back)
                driver.run("long")
            paths[cycles] = out / f"long{cycles}.jsonl"
            paths[cycles].write_bytes(export_record(store, "long", tools=info).to_bytes())
    yield paths


def test_replay_memory_does_not_grow_with_the_record(long_records: dict[int, Path]) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["replay", str(long_records[10])]).exit_code == 0  # warm up
    peaks = {}
    for cycles, path in long_records.items():
        tracemalloc.start()
        try:
            result = runner.invoke(main, ["replay", str(path)])
            peaks[cycles] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert result.exit_code == 0, result.output
    assert long_records[40].stat().st_size > 3 * long_records[10].stat().st_size
    # Holding the file or every revision, 4x the record took 3.5x the memory.
    assert peaks[40] < 1.5 * peaks[10], peaks


def test_the_replay_store_keeps_only_what_a_replay_can_need(
        long_records: dict[int, Path]) -> None:
    record = read_record(long_records[10])
    store = ReplayStore(record.summary.targets)
    report = replay_record(record, store=store)
    full = MemoryStore()
    assert report == replay_record(record, store=full)
    kept = store.history("long")
    head = store.head("long")
    target = next(iter(record.summary.targets))
    assert {r.rev for r in kept} == {head.rev, head.state.entry_rev, target,
                                     full.get("long", target).state.entry_rev}
    assert len(kept) < 5 < len(full.history("long"))
    with pytest.raises(UnknownRevision, match="was dropped by the replay store"):
        store.get("long", head.rev - 1)
