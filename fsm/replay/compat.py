"""``check-compat``: would today's code treat stored sessions (or records) the same?

Each session is replayed in tools mode (tool results from its history, every skill run
again by today's code) from the version it started on, whatever today's version is: the
check compares behaviour, not version strings, so records made again by today's code
pass. Per session the answer is:

- ``same``: every step decides as recorded;
- ``diverges at rev N (PATH, expected, actual)``: the first step that decides otherwise;
- ``cannot continue (state gone, no migration)``: the session is (or passes) in a state
  today's machine does not have, and no migration is declared for its version.

A session is *affected* when it is open (not in a final state) and not ``same``, or when
it diverges although it is on today's version (or on none, ``unknown``): then behaviour
changed without a version bump, the change this check exists to catch before a deploy.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any, Literal

from claimfsm.engine.bindings import DEFAULT_BINDINGS, Binding
from claimfsm.engine.errors import ClaimFsmError, MachineMismatch, UnknownState
from claimfsm.engine.machine import DEFAULT_MACHINE, MachineDef
from claimfsm.engine.version import UNKNOWN, Versioning, machine_version
from claimfsm.replay.diff import short
from claimfsm.replay.record import Record, RecordError, read_record
from claimfsm.replay.runner import Replayable, replay_record
from claimfsm.replay.write import export_record, tools_info

__all__ = [
    "CompatCheck",
    "CompatSummary",
    "Status",
    "check_files",
    "check_record",
    "check_store",
    "checks_in_parallel",
    "summarize",
]

Status = Literal["same", "diverges", "cannot continue", "cannot check"]


@dataclass(frozen=True)
class CompatCheck:
    """What the check found for one session (``source``: its sid or record file)."""

    source: str
    sid: str
    version: str
    open: bool
    status: Status
    affected: bool
    rev: int | None = None
    path: str | None = None
    expected: Any = None
    actual: Any = None
    detail: str = ""

    def line(self) -> str:
        """The one-line answer for people."""
        if self.status == "diverges":
            what = (f"diverges at rev {self.rev} ({self.path}, {short(self.expected)}, "
                    f"{short(self.actual)})")
        elif self.status == "cannot continue":
            what = "cannot continue (state gone, no migration)"
        elif self.status == "cannot check":
            what = f"cannot check ({self.detail})"
        else:
            what = "same"
        flags = ("open" if self.open else "done") + (", AFFECTED" if self.affected else "")
        return f"{self.source}  [{self.version}, {flags}]  {what}"

    def to_json(self) -> dict[str, Any]:
        """The answer as JSON data."""
        return {"source": self.source, "sid": self.sid, "version": self.version,
                "open": self.open, "status": self.status, "affected": self.affected,
                "rev": self.rev, "path": self.path, "expected": self.expected,
                "actual": self.actual, "detail": self.detail}


@dataclass
class CompatSummary:
    """Counts over every checked session."""

    version: str
    sessions: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    affected: int = 0

    def add(self, check: CompatCheck) -> None:
        """Count ``check``."""
        self.sessions += 1
        self.counts[check.status] = self.counts.get(check.status, 0) + 1
        self.affected += check.affected

    def line(self) -> str:
        """The summary for people."""
        parts = ", ".join(f"{n} {s}" for s, n in self.counts.items()) or "none"
        return (f"{self.sessions} sessions checked against version {self.version}: {parts}; "
                f"{self.affected} affected")

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON data."""
        return {"version": self.version, "sessions": self.sessions,
                "same": self.counts.get("same", 0),
                "diverges": self.counts.get("diverges", 0),
                "cannot_continue": self.counts.get("cannot continue", 0),
                "cannot_check": self.counts.get("cannot check", 0),
                "affected": self.affected}


def check_record(record: Replayable, *, source: str | None = None,
                 machine: MachineDef = DEFAULT_MACHINE,
                 bindings: Mapping[str, Binding] = DEFAULT_BINDINGS,
                 versioning: Versioning | None = None) -> CompatCheck:
    """Replay ``record`` in tools mode against ``machine`` and ``bindings`` (today's code)."""
    versioning = versioning or Versioning(machine_version(machine, bindings))
    header = record.header
    version = header.version or UNKNOWN
    is_open = record.end is None
    name = source or record.source or header.sid
    migrates = version in versioning.migrations
    unbumped = version in (versioning.version, UNKNOWN)

    def made(status: Status, **more: Any) -> CompatCheck:
        affected = (is_open and status != "same") or (status == "diverges" and unbumped)
        return CompatCheck(source=name, sid=header.sid, version=version, open=is_open,
                           status=status, affected=affected or status == "cannot check",
                           **more)

    head_fsm = record.summary.head_fsm or machine.initial
    if is_open and head_fsm not in machine.names and not migrates:
        return made("cannot continue")
    try:
        report = replay_record(record, "tools", machine=machine, bindings=bindings,
                               versioning=versioning)
    except (MachineMismatch, UnknownState):
        return made("cannot continue" if not migrates else "cannot check",
                    detail="a recorded state is gone")
    except (RecordError, ClaimFsmError) as exc:
        return made("cannot check", detail=f"{getattr(exc, 'code', 'ERROR')}: {exc}")
    div = report.divergence
    if div is None:
        return made("same")
    return made("diverges", rev=_rev_at(record, div.line), path=div.path,
                expected=div.expected, actual=div.actual)


def _rev_at(record: Replayable, line: int) -> int:
    # The revision the divergent line commits (or would have: head + 1).
    for n, entry in record.walk():
        if n == line:
            return entry.rev if entry.rev is not None else entry.head + 1
    return record.summary.head + 1


def check_store(store: Any, sids: Iterable[str], *, machine: MachineDef = DEFAULT_MACHINE,
                bindings: Mapping[str, Binding] = DEFAULT_BINDINGS,
                versioning: Versioning | None = None) -> Iterator[CompatCheck]:
    """:func:`check_record` of each stored session of ``sids``, rebuilt from its history
    (the store is only read)."""
    from claimfsm.engine.runtime import DEFAULT_FALLBACKS

    versioning = versioning or Versioning(machine_version(machine, bindings))
    tools = tools_info(documents=0, facts=0, fallbacks=DEFAULT_FALLBACKS)
    for sid in sids:
        try:
            # No chain hashes: the check compares decisions, and hashing every revision
            # twice (export, replay) would be a third of its time.
            record: Record = export_record(store, sid, tools=tools, bindings=bindings,
                                           machine=machine.name, finals=machine.finals,
                                           hashes=False)
        except (RecordError, ClaimFsmError) as exc:
            yield CompatCheck(source=sid, sid=sid, version=UNKNOWN, open=True,
                              status="cannot check", affected=True,
                              detail=f"{getattr(exc, 'code', 'ERROR')}: {exc}")
            continue
        yield check_record(record, source=sid, machine=machine, bindings=bindings,
                           versioning=versioning)


def summarize(checks: Iterable[CompatCheck], version: str) -> CompatSummary:
    """Count ``checks``."""
    summary = CompatSummary(version)
    for check in checks:
        summary.add(check)
    return summary


def check_files(paths: Sequence[str]) -> list[CompatCheck]:
    """:func:`check_record` of each record file of ``paths`` (an unreadable one is
    ``cannot check``)."""
    out = []
    for path in paths:
        try:
            record = read_record(path)
        except RecordError as exc:
            out.append(CompatCheck(source=path, sid="-", version=UNKNOWN, open=True,
                                   status="cannot check", affected=True,
                                   detail=f"{exc.code}: {exc}"))
            continue
        out.append(check_record(record, source=path))
    return out


def _check_stored(db: str, sids: Sequence[str]) -> list[CompatCheck]:
    from claimfsm.state.open import open_store

    with open_store(db, readonly=True) as store:
        return list(check_store(store, sids))


#: Sessions per task: enough that a worker's start-up and the store's opening are paid
#: rarely, few enough that the progress bar moves.
CHUNK = 50


def checks_in_parallel(items: Sequence[str], jobs: int | None, *,
                       db: str | None = None) -> Iterator[CompatCheck]:
    """The checks of ``items`` (sids of store ``db``, else record file paths) in their
    order, run in ``jobs`` processes (default: every CPU; fewer for few items; 1: in
    this one). Each worker opens the store read-only itself. Skills take nearly all of
    a check's time, so processes, not threads."""
    chunks = [list(items[i:i + CHUNK]) for i in range(0, len(items), CHUNK)]
    workers = min(jobs or os.cpu_count() or 1, len(chunks))
    run: Callable[[list[str]], list[CompatCheck]] = (
        check_files if db is None else functools.partial(_check_stored, db))
    if workers <= 1:
        for chunk in chunks:
            yield from run(chunk)
        return
    # Spawned, not forked: a forked child would share the parent's open SQLite handles.
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        for done in pool.map(run, chunks):
            yield from done
