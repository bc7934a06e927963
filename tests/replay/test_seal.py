"""A record's chain hashes are the stores' own, and --record, export and step --record
write the same sealed lines."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import Driver
from claimfsm.engine.runtime import DEFAULT_FALLBACKS, Engine, seed_demo
from claimfsm.replay import (
    HashChain,
    Recorder,
    RecordWriteError,
    export_record,
    parse_record,
    read_record,
    replay_record,
    tools_info,
)
from claimfsm.replay.seal import seal_line, unseal
from claimfsm.replay.tools import runtime_from_info
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.state.memory import MemoryStore
from claimfsm.state.postgres import PostgresStore
from claimfsm.state.sqlite import SQLiteStore
from claimfsm.state.store import StateStore

OLD = Path(__file__).resolve().parents[1] / "data" / "records" / "supported-0.1.0.jsonl"


@pytest.fixture
def index() -> Iterator[EvidenceIndex]:
    with EvidenceIndex.open(":memory:") as idx:
        seed_demo(idx)
        yield idx


def session_with_rewind(store: StateStore, index: EvidenceIndex) -> tuple[str, dict[str, object]]:
    info = tools_info(documents=index.count_documents(), facts=index.count_facts(),
                      fallbacks=DEFAULT_FALLBACKS)
    driver = Driver(store, tools=runtime_from_info(index, info),
                    clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    sid = driver.start("Sydney is the capital of Australia.", sid="s").sid
    for _ in range(4):
        driver.step(sid)
    driver.rollback(sid, 2)
    driver.run(sid)
    return sid, info


def check_hashes_are_the_stores(store: SQLiteStore | PostgresStore,
                                index: EvidenceIndex) -> None:
    sid, info = session_with_rewind(store, index)
    record = export_record(store, sid, tools=info)
    assert record.header.h == store.revision_hash(sid, 0)
    assert [e.h for e in record.entries] == [store.revision_hash(sid, e.rev)
                                            for e in record.entries if e.rev is not None]
    assert record.end is not None and record.end.h == store.revision_hash(sid, record.end.rev)
    again = parse_record(record.to_bytes())
    assert again.verified and replay_record(again).ok


def test_the_chain_hashes_are_the_sqlite_stores(tmp_path: Path,
                                                index: EvidenceIndex) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        check_hashes_are_the_stores(store, index)


def test_the_chain_hashes_are_the_postgres_stores(pg_url: str, index: EvidenceIndex) -> None:
    with PostgresStore(pg_url) as store:
        check_hashes_are_the_stores(store, index)


def test_a_chain_resumed_from_a_hash_goes_on_alike(tmp_path: Path,
                                                   index: EvidenceIndex) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        sid, _ = session_with_rewind(store, index)
        history = list(store.history(sid))
        chain = HashChain()
        chain.resume(5, store.revision_hash(sid, 5))
        assert [chain.add(r) for r in history[6:]] == [store.revision_hash(sid, r.rev)
                                                      for r in history[6:]]


def test_a_sealed_line_round_trips_and_its_seal_is_last() -> None:
    obj = {"t": "end", "rev": 3, "fsm": "DONE", "verdict": None, "h": "ab" * 32}
    line = seal_line(obj)
    parsed = orjson.loads(line)
    assert list(parsed)[-1] == "sum" and line.endswith(b'"}\n')
    assert unseal(line[:-1], parsed) == obj


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_step_record_appends_lines_equal_to_the_export(tmp_path: Path) -> None:
    db, rec = str(tmp_path / "s.db"), tmp_path / "p.jsonl"
    sid = run("start", "Sydney is the capital of Australia.", "--db", db,
              "--record", str(rec))[1].strip()
    for _ in range(3):
        assert run("step", sid, "--db", db, "--record", str(rec))[0] == 0
    assert run("rollback", sid, "--to", "1", "--db", db)[0] == 0
    later = tmp_path / "later.jsonl"  # a fresh file after a rewind: the export, then on
    while run("show", sid, "--db", db, "--json")[1].find('"DONE"') < 0:
        assert run("step", sid, "--db", db, "--record", str(later))[0] == 0
    code, exported, _ = run("export", sid, "--db", db)
    assert code == 0 and exported.encode() == later.read_bytes()
    assert read_record(later).verified and run("replay", str(later))[0] == 0
    assert exported.encode().startswith(rec.read_bytes())


def test_step_record_refuses_a_record_of_another_store(tmp_path: Path) -> None:
    rec = tmp_path / "p.jsonl"
    code, out, _ = run("start", "Honey never spoils.", "--db", str(tmp_path / "a.db"),
                       "--record", str(rec))
    sid = out.strip()
    # The same session id in another store, started a minute later: revision 0 differs.
    config = EngineConfig(clock=FixedClock(datetime(2026, 1, 1, 0, 1, tzinfo=UTC)))
    with Engine.open(str(tmp_path / "b.db"), config=config) as eng:
        eng.driver.start("Honey never spoils.", sid=sid)
    code, _, err = run("step", sid, "--db", str(tmp_path / "b.db"), "--record", str(rec))
    assert code == 2 and "error: RECORD_MISMATCH:" in err and "chain hash differs" in err
    assert len(rec.read_bytes().splitlines()) == 1  # nothing appended


def test_a_format_1_record_is_not_continued(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_bytes(OLD.read_bytes())
    with pytest.raises(RecordWriteError, match="a format 1 record"):
        Recorder(old, append=True, head=7)
    assert old.read_bytes() == OLD.read_bytes()


def test_a_recorder_writes_rewinds_as_the_export_does(tmp_path: Path,
                                                      index: EvidenceIndex) -> None:
    info = tools_info(documents=index.count_documents(), facts=index.count_facts(),
                      fallbacks=DEFAULT_FALLBACKS)
    path = tmp_path / "r.jsonl"
    store = MemoryStore()
    with Recorder(path, finals=frozenset()) as rec:  # the end line only when told
        driver = Driver(store, tools=runtime_from_info(index, info),
                        clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC)), on_step=rec)
        rec.header(driver.start("Sydney is the capital of Australia.", sid="s"), info)
        driver.run("s")
        rec.rewind(driver.rollback("s", 2))
        rec.end(driver.run("s"))
        assert path.read_bytes() == export_record(store, "s", tools=info).to_bytes()
        with pytest.raises(RecordWriteError, match="has its end line"):
            rec.rewind(driver.rollback("s", 1))
    record = read_record(path)
    assert record.verified and replay_record(record).ok
