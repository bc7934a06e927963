"""What tamper-evident records cost, and what `claimfsm replay` holds in memory.

``python -m claimfsm.bench.records [--memory 10,100,1000] [--keep DIR] [--json FILE]``

- per line of the shipped records: reading a line (JSON, seal, fields), of which the seal
  check, and sealing it when written; per replayed revision: the chain hash;
- with ``--memory``: the peak resident memory and wall time of ``claimfsm replay`` (a
  child process each) on records of about that many MB, made here: one session over the
  demo corpus with every page padded to 300 KB, rewound to before EXTRACT and run again
  until the record is that large.

Figures, never assertions: docs/replay.md holds a run's.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from claimfsm.engine.driver import Driver
from claimfsm.engine.runtime import DEFAULT_FALLBACKS, FIXTURES, seed_demo
from claimfsm.replay.record import LineChecker, Record, read_record
from claimfsm.replay.runner import replay_record
from claimfsm.replay.seal import HashChain, seal_line, unseal
from claimfsm.replay.store import ReplayStore
from claimfsm.replay.tools import runtime_from_info
from claimfsm.replay.write import Recorder, tools_info
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.documents import Document
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.state.memory import MemoryStore

__all__ = ["line_costs", "make_record", "replay_peak", "run"]

SESSIONS = Path(FIXTURES) / "sessions"
PAGE = 300_000


def _best(fn: Callable[[], object], rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def line_costs(rounds: int = 5) -> dict[str, float]:
    """Microseconds per line (reading, seal check, sealing) and per revision (chain hash)
    over the shipped records, best of ``rounds``."""
    lines = [raw for p in sorted(SESSIONS.glob("*.jsonl")) for raw in
             p.read_bytes().splitlines()]
    per_file = [p.read_bytes().splitlines() for p in sorted(SESSIONS.glob("*.jsonl"))]
    parsed = [orjson.loads(raw) for raw in lines]
    plain = [{k: v for k, v in o.items() if k != "sum"} for o in parsed]

    def read() -> None:
        for raws in per_file:
            checker = LineChecker()
            for n, raw in enumerate(raws, start=1):
                checker.feed(n, raw)

    def check() -> None:
        for raw in lines:
            unseal(raw, orjson.loads(raw))

    def load() -> None:
        for raw in lines:
            orjson.loads(raw)

    def seal() -> None:
        for obj in plain:
            seal_line(obj)

    histories = []
    for p in sorted(SESSIONS.glob("*.jsonl")):
        store = MemoryStore()
        replay_record(read_record(p), store=store)
        histories.append(list(store.history(store.sessions()[0])))
    revisions = sum(len(h) for h in histories)

    def chain() -> None:
        for history in histories:
            hashes = HashChain()
            for rev in history:
                hashes.add(rev)

    records = [read_record(p) for p in sorted(SESSIONS.glob("*.jsonl"))]
    # The same records without their hashes: a replay that checks none.
    unhashed = [replace(r, header=r.header.model_copy(update={"h": None}),
                        entries=tuple(e.model_copy(update={"h": None}) for e in r.entries))
                for r in records]
    steps = sum(r.summary.steps for r in records)

    def replay(which: list[Record]) -> Callable[[], None]:
        def run() -> None:
            for record in which:
                replay_record(record)
        return run

    n = len(lines)
    us = 1e6
    return {"lines": n, "bytes_per_line": sum(map(len, lines)) / n,
            "read_us": _best(read, rounds) * us / n,
            "seal_check_us": (_best(check, rounds) - _best(load, rounds)) * us / n,
            "seal_us": _best(seal, rounds) * us / n,
            "revisions": revisions,
            "chain_hash_us": _best(chain, rounds) * us / revisions,
            "replay_step_us": _best(replay(records), rounds) * us / steps,
            "replay_step_unhashed_us": _best(replay(unhashed), rounds) * us / steps}


def make_record(path: Path, size: int, page: int = PAGE) -> int:
    """Write a valid record of about ``size`` bytes to ``path`` (see the module); its size."""
    with EvidenceIndex.open(":memory:") as index:
        seed_demo(index)
        filler = " ".join(f"Filler sentence number {i} says nothing about anything."
                          for i in range(page // 55))
        ids = [r[0] for r in index.conn.execute("SELECT doc_id FROM ev_docs")]
        docs = [index.get_document(i) for i in ids]
        index.add_documents([Document(doc_id=d.doc_id, title=d.title, source=d.source,
                                      text=d.text + " " + filler) for d in docs if d])
        info = tools_info(documents=index.count_documents(), facts=index.count_facts(),
                          fallbacks=DEFAULT_FALLBACKS)
        tools = runtime_from_info(index, info)
        claim, start = "NASA landed on the Moon in 1969.", datetime(2026, 1, 1, tzinfo=UTC)
        probe = MemoryStore()  # a first run finds the revision to rewind to
        first = Driver(probe, tools=tools, clock=FixedClock(start))
        first.run(first.start(claim, sid="big").sid)
        back = next(r.rev for r in probe.history("big") if r.fsm == "EXTRACT") - 1
        # No end line until the last run: a rewind after it would start another record.
        with Recorder(path, finals=frozenset()) as rec:
            driver = Driver(ReplayStore({back}), tools=tools, clock=FixedClock(start),
                            on_step=rec)
            rec.header(driver.start(claim, sid="big"), info)
            head = driver.run("big")
            while path.stat().st_size < size:
                rec.rewind(driver.rollback("big", back))
                head = driver.run("big")
            rec.end(head)
    return path.stat().st_size


def replay_peak(path: Path) -> dict[str, Any]:
    """Peak resident memory (MB) and wall time (s) of ``claimfsm replay PATH`` in a child
    that measures its own child: each figure is one process's."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
             "p = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
             "time.perf_counter() - t, p.returncode)")
    cli = "from claimfsm.cli import main; main()"
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, "-c", cli, "replay",
                          str(path)], capture_output=True, text=True, check=True)
    kb, seconds, code = out.stdout.split()
    return {"mb": path.stat().st_size / 1e6, "peak_mb": int(kb) / 1024,
            "seconds": float(seconds), "exit": int(code)}


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure, print a table, return the figures."""
    ap = argparse.ArgumentParser(prog="python -m claimfsm.bench.records")
    ap.add_argument("--memory", default="", help="record sizes in MB, e.g. 10,100,1000")
    ap.add_argument("--keep", type=Path, default=None, help="make the records here, keep them")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    costs = line_costs()
    print(f"{costs['lines']} lines of the shipped records, {costs['bytes_per_line']:.0f} "
          "bytes each on average")
    for key, what in (("read_us", "read a line (JSON, seal, fields, chain of heads)"),
                      ("seal_check_us", "  of which the seal check"),
                      ("seal_us", "seal a line (writing)"),
                      ("chain_hash_us", "chain hash of a replayed revision"),
                      ("replay_step_us", "strict replay, per step, hashes checked"),
                      ("replay_step_unhashed_us", "strict replay, per step, no hash")):
        print(f"  {what:<52} {costs[key]:8.1f} us")
    peaks = []
    sizes = [int(s) for s in args.memory.split(",") if s.strip()]
    if sizes:
        with tempfile.TemporaryDirectory() as tmp:
            where = args.keep or Path(tmp)
            where.mkdir(parents=True, exist_ok=True)
            for mb in sizes:
                path = where / f"record-{mb}mb.jsonl"
                if not path.exists():
                    make_record(path, mb * 1_000_000)
                peak = replay_peak(path)
                peaks.append(peak)
                print(f"  claimfsm replay, {peak['mb']:7.1f} MB record: peak "
                      f"{peak['peak_mb']:6.0f} MB, {peak['seconds']:6.1f} s, exit {peak['exit']}")
    figures = {"costs": costs, "replay_memory": peaks,
               "max_rss_self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if args.json is not None:
        args.json.write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))
    return figures


if __name__ == "__main__":
    run()
