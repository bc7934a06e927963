"""``claimfsm replay`` and ``claimfsm export``, and the ``--record`` option of the
session commands (``verify``, ``start``, ``step``).

Exit codes of ``replay``: 0 every record replayed clean, 1 a divergence, 2 a record that
cannot be read (``BAD_RECORD``, with the line number), was edited after it was written
(``RECORD_TAMPERED``, with the line and field) or is over a limit (``INPUT_TOO_LARGE``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from claimfsm.cli.common import (
    db_option,
    emit,
    fail,
    json_option,
    readonly_index,
    record_option,
    store,
)
from claimfsm.engine.driver import StepResult
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.engine.runtime import Engine
from claimfsm.replay.diff import short
from claimfsm.replay.record import Record, RecordError, read_record
from claimfsm.replay.runner import MODES, Mode, ReplayReport, replay_record
from claimfsm.replay.seal import HashChain
from claimfsm.replay.source import find_records, open_record
from claimfsm.replay.write import (
    Recorder,
    RecordWriteError,
    engine_tools,
    export_record,
    tools_info,
)
from claimfsm.state.model import Revision

if TYPE_CHECKING:
    from claimfsm.skills.tools.index import EvidenceIndex

__all__ = [
    "engine_tools",
    "export",
    "open_recorder",
    "record_option",
    "recorder_for_session",
    "replay",
    "start_record",
    "with_recorder",
]



def open_recorder(path: str | None, as_json: bool) -> Recorder | None:
    """A recorder writing ``path`` (``None`` without ``--record``), closed with the command."""
    if path is None:
        return None
    try:
        rec = Recorder(path)
    except RecordWriteError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        raise  # unreachable: fail exits
    click.get_current_context().call_on_close(rec.close)
    return rec


def with_recorder(
    hook: Callable[[StepResult], None] | None, rec: Recorder | None
) -> Callable[[StepResult], None] | None:
    """``hook`` followed by the recorder (either may be absent)."""
    if rec is None or hook is None:
        return rec or hook

    def both(result: StepResult) -> None:
        hook(result)
        rec(result)

    return both


def start_record(rec: Recorder | None, eng: Engine) -> Callable[[Revision], None] | None:
    """The hook that writes the header before revision 0 is stored (``before_create``), so
    a record that cannot be written leaves no session behind."""
    if rec is None:
        return None

    def header(first: Revision) -> None:
        rec.header(first, engine_tools(eng))

    return header


def recorder_for_session(path: str, eng: Engine, sid: str, as_json: bool) -> Recorder:
    """A recorder appending to ``path`` for session ``sid`` (``step --record``).

    A missing or empty file first gets the session so far (as ``export`` writes it); an
    existing one must be this session's record and reach its current head, with that
    revision's chain hash.
    """
    p = Path(path)
    head = eng.store.head(sid)
    if not p.exists() or p.stat().st_size == 0:
        rec = Recorder(p, head=head.rev)
        rec.write(export_record(eng.store, sid, tools=engine_tools(eng),
                                bindings=eng.driver.bindings))
        click.get_current_context().call_on_close(rec.close)
        return rec
    record = read_record(p)
    last, h = _last_rev(record)
    if record.header.sid != sid or last != head.rev:
        what = (f"is the record of session {record.header.sid}" if record.header.sid != sid
                else f"ends at revision {last}, the session's head is {head.rev}")
        fail("RECORD_MISMATCH", f"--record {path} {what}", as_json=as_json)
    if h is not None and h != _head_hash(eng, sid):
        fail("RECORD_MISMATCH", f"--record {path}: revision {last} is not this store's "
             "(its chain hash differs)", as_json=as_json)
    rec = Recorder(p, append=True, head=head.rev)
    click.get_current_context().call_on_close(rec.close)
    return rec


def _last_rev(record: Record) -> tuple[int, str | None]:
    """The record's last revision and its chain hash (``None`` in format 1)."""
    for entry in reversed(record.entries):
        if entry.rev is not None:
            return entry.rev, entry.h
    return (record.entries[-1].head if record.entries else 0), record.header.h


def _head_hash(eng: Engine, sid: str) -> str:
    chain = HashChain()
    h = ""
    for rev in eng.store.history(sid):
        h = chain.add(rev)
    return h


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--mode", type=click.Choice(MODES), default="strict", show_default=True,
              help="strict: tools and clock from the record, envelopes must match; tools: "
              "tool results from the record, skills re-run; live: real tools.")
@click.option("--db", "db", default=None, type=click.Path(dir_okay=False, exists=True),
              help="Live mode: the evidence index to use (default: the bundled demo corpus).")
@json_option
def replay(path: Path, mode: str, db: str | None, as_json: bool) -> None:
    """Replay a session record (or every *.jsonl under a folder) and report divergences.

    Every line is checked against its seal first (format 2 records; older ones replay
    unverified). Exit 0 when everything replayed clean, 1 on a divergence, 2 on a record
    that cannot be read, was edited, or is over a limit.
    """
    try:
        files = find_records(path) if path.is_dir() else [path]
    except RecordError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        raise  # unreachable: fail exits
    if not files:
        fail("NO_RECORDS", f"path: no *.jsonl records under {path}", as_json=as_json)
    rows: list[ReplayReport | RecordError] = []
    with ExitStack() as stack:
        # Live mode reads --db's evidence index and writes nothing to it; another
        # program's database is refused, as batch refuses it.
        index = (stack.enter_context(readonly_index(db, as_json))
                 if db is not None and mode == "live" else None)
        for f in files:
            rows.append(_replay_file(f, cast(Mode, mode), index))
    bad = [r for r in rows if isinstance(r, RecordError)]
    reports = [r for r in rows if isinstance(r, ReplayReport)]
    if not path.is_dir():
        if bad:
            fail(bad[0].code, bad[0].msg, as_json=as_json)
        report = reports[0]
        if as_json:
            emit(report.to_json())
        else:
            click.echo("\n".join(report_lines(report)))
        sys.exit(0 if report.ok else 1)
    if as_json:
        emit({"records": [r.to_json() if isinstance(r, ReplayReport) else
                          {"error": r.to_dict()} for r in rows],
              "summary": {"total": len(rows), "ok": sum(r.ok for r in reports),
                          "diverged": sum(not r.ok for r in reports), "bad": len(bad),
                          "unverified": sum(not r.verified for r in reports)}})
    else:
        click.echo("\n".join(summary_table(rows, base=path)))
    sys.exit(2 if bad else (1 if any(not r.ok for r in reports) else 0))


def _replay_file(f: Path, mode: Mode,
                 index: EvidenceIndex | None) -> ReplayReport | RecordError:
    try:
        with open_record(f) as record:
            return replay_record(record, mode, index=index)
    except RecordError as exc:
        return exc
    except ClaimFsmError as exc:
        return RecordError(f"{exc.code}: {exc.msg}", source=str(f))


def _seal(report: ReplayReport) -> str:
    return ("verified" if report.verified else
            f"unverified (a format {report.format} record: its lines carry no seals)")


def report_lines(report: ReplayReport) -> list[str]:
    """A replay report for people."""
    exp, act = report.expected, report.actual
    head = f"replay {report.source} ({report.mode}): "
    if report.ok:
        return [head + f"ok, {report.steps} steps, {act.fsm}, verdict {act.verdict or '-'}, "
                + _seal(report)]
    d = report.divergence
    lines = [head + "DIVERGED", f"  record:   {_seal(report)}"]
    if d is not None:
        lines += [f"  step:     {d.step} (line {d.line})",
                  f"  state:    {d.state} ({d.skill or '-'})",
                  f"  kind:     {d.kind}",
                  f"  path:     {d.path}",
                  f"  expected: {short(d.expected)}",
                  f"  actual:   {short(d.actual)}"]
    changed = "CHANGED" if report.verdict_changed else "unchanged"
    lines += [f"  verdict:  {exp.verdict or '-'} -> {act.verdict or '-'} ({changed})",
              f"  outcome:  {exp.fsm} after {exp.steps} steps -> {act.fsm} after "
              f"{act.steps} steps"]
    return lines


def summary_table(rows: list[ReplayReport | RecordError], *, base: Path) -> list[str]:
    """One row per record: steps, result, verdict, first divergence."""
    out = [f"{'record':<32} {'mode':<6} {'steps':>5}  {'result':<10} {'verdict':<16} "
           "first divergence"]
    for r in rows:
        if isinstance(r, RecordError):
            src = r.source or "-"
            name = _rel(src, base)
            out.append(f"{name:<32} {'-':<6} {'-':>5}  {r.code:<10} {'-':<16} {r.msg}")
            continue
        d = r.divergence
        where = "-" if d is None else f"step {d.step} {d.state} {d.kind} at {d.path}"
        verdict = r.actual.verdict or "-"
        if r.verdict_changed:
            verdict = f"{r.expected.verdict or '-'}->{verdict}"
        result = ("ok" if r.ok else "DIVERGED") + ("" if r.verified else "*")
        out.append(f"{_rel(r.source, base):<32} {r.mode:<6} {r.steps:>5}  "
                   f"{result:<10} {verdict:<16} {where}")
    ok = sum(1 for r in rows if isinstance(r, ReplayReport) and r.ok)
    unverified = sum(1 for r in rows if isinstance(r, ReplayReport) and not r.verified)
    out.append(f"{ok} of {len(rows)} records replayed clean"
               + (f"; {unverified} unverified (format 1: no seals)" if unverified else ""))
    return out


def _rel(source: str, base: Path) -> str:
    try:
        return str(Path(source).relative_to(base))
    except ValueError:
        return source


@click.command()
@click.argument("sid")
@click.option("-o", "--output", "output", default=None, type=click.Path(dir_okay=False),
              help="Write to this file instead of stdout.")
@db_option
def export(sid: str, output: str | None, db: str) -> None:
    """Write the record of stored session SID (JSONL), as `--record` would have.

    Only committed steps are stored, so an export holds no uncommitted step.
    """
    from claimfsm.engine.runtime import DEFAULT_FALLBACKS
    from claimfsm.state.open import locate

    # Read-only: the store and its evidence index (for the header's tools) are read
    # without writing a byte, as `show` reads them.
    with store(db, False) as opened, readonly_index(locate(db).index, False) as index:
        try:
            record = export_record(opened, sid, tools=tools_info(
                documents=index.count_documents(), facts=index.count_facts(),
                fallbacks=DEFAULT_FALLBACKS))
        except RecordError as exc:
            fail(exc.code, exc.msg, as_json=False)
    data = record.to_bytes()
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        Path(output).write_bytes(data)
    except OSError as exc:
        fail("RECORD_WRITE_FAILED", f"{output}: {exc.strerror or exc}", as_json=False)
