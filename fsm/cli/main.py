"""``claimfsm``: drive, inspect and test claim-verification sessions.

Every command takes ``--db PATH`` (default ``claimfsm.db``, SQLite) and most take
``--json`` for scripts. Errors print a stable code and a message and exit non-zero;
no command prints a traceback for bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import orjson

from fsm.cli import bench as cli_bench
from fsm.cli import eval as cli_eval
from fsm.cli import replay as cli_replay
from fsm.cli import train as cli_train
from fsm.cli.common import db_option, durability_option, emit, engine, json_option
from fsm.cli.limits import limit_options, limits_config
from fsm.driver import StepResult
from fsm.machine import DEFAULT_MACHINE, mermaid
from fsm.views import revision_json, revision_line, session_summary, verdict_json
from skills.context import SkillContext
from skills.envelope import Envelope
from skills.registry import all_skills
from skills.tools.index import SOURCES, Source

__all__ = ["main"]

def _print_step(result: StepResult) -> None:
    if result.revision is not None:
        click.echo(revision_line(result.revision, result.before))
    elif result.envelope.e is not None:
        click.echo(f"   -  {result.before:<26} {result.skill or '-':<18} "
                   f"{result.envelope.s} {result.envelope.e.code}: {result.envelope.e.msg}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="claimfsm")
def main() -> None:
    """Verify factual claims step by step with an explicit, replayable state machine.

    A session moves PARSE_CLAIM -> RETRIEVAL -> EXTRACT -> VERIFY -> AGGREGATE -> DONE;
    every step commits one revision you can show, rewind or fork.
    """


@main.command()
@click.argument("claim")
@db_option
@json_option
@durability_option
@cli_replay.record_option
@limit_options
def verify(claim: str, db: str, as_json: bool, durability: str, record: str | None,
           deadline: float | None, max_tool_calls: int | None) -> None:
    """Run a session for CLAIM to the end and print the verdict with its evidence.

    Exit 0 when the session reached DONE, 1 when it ended elsewhere (FAILED, or a step
    that could not commit); the output says why.
    """
    rec = cli_replay.open_recorder(record, as_json)
    hook = cli_replay.with_recorder(None if as_json else _print_step, rec)
    with engine(db, as_json, on_step=hook, durability=durability) as eng:
        head = eng.driver.start(claim, config=limits_config(deadline, max_tool_calls))
        cli_replay.start_record(rec, eng, head)
        if not as_json:
            click.echo(revision_line(head))
        head = eng.driver.run(head.sid)
        if as_json:
            emit(verdict_json(head))
        else:
            click.echo("\n".join(session_summary(head)))
        if head.fsm != "DONE":
            sys.exit(1)


@main.command()
@click.argument("claim")
@db_option
@json_option
@durability_option
@cli_replay.record_option
@limit_options
def start(claim: str, db: str, as_json: bool, durability: str, record: str | None,
          deadline: float | None, max_tool_calls: int | None) -> None:
    """Create a session for CLAIM (revision 0, PARSE_CLAIM) and print its id."""
    rec = cli_replay.open_recorder(record, as_json)
    with engine(db, as_json, durability=durability) as eng:
        head = eng.driver.start(claim, config=limits_config(deadline, max_tool_calls))
        cli_replay.start_record(rec, eng, head)
        if as_json:
            emit(revision_json(head, full=False))
        else:
            click.echo(head.sid)


@main.command()
@click.argument("sid")
@db_option
@json_option
@durability_option
@cli_replay.record_option
def step(sid: str, db: str, as_json: bool, durability: str, record: str | None) -> None:
    """Fire one transition of session SID (exit 1 if the step failed)."""
    with engine(db, as_json, durability=durability) as eng:
        if record is not None:
            eng.driver.on_step = cli_replay.recorder_for_session(record, eng, sid, as_json)
        result = eng.driver.step(sid)
        if as_json:
            emit({"sid": sid, "before": result.before, "after": result.after,
                  "skill": result.skill, "committed": result.committed,
                  "rev": result.revision.rev if result.revision else None,
                  "envelope": result.envelope.to_dict()})
        else:
            _print_step(result)
        if result.envelope.s != "ok":
            sys.exit(1)


@main.command()
@click.argument("sid")
@click.option("--rev", type=int, default=None, help="Show this revision instead of the head.")
@db_option
@json_option
def show(sid: str, rev: int | None, db: str, as_json: bool) -> None:
    """Show a session's head (or --rev N): state, verdict and evidence."""
    with engine(db, as_json, seed=False) as eng:
        r = eng.store.head(sid) if rev is None else eng.store.get(sid, rev)
        if as_json:
            emit(revision_json(r))
        else:
            click.echo("\n".join(session_summary(r)))


@main.command()
@click.argument("sid")
@db_option
@json_option
def history(sid: str, db: str, as_json: bool) -> None:
    """List every revision of SID, oldest first, with its tool events."""
    with engine(db, as_json, seed=False) as eng:
        revs = list(eng.store.history(sid))
        if as_json:
            emit([revision_json(r, full=False) for r in revs])
            return
        before: str | None = None
        for r in revs:
            click.echo(revision_line(r, before))
            before = r.fsm


@main.command()
@click.argument("sid")
@click.option("--to", "to", type=int, required=True, help="Revision to rewind to.")
@db_option
@json_option
@durability_option
def rollback(sid: str, to: int, db: str, as_json: bool, durability: str) -> None:
    """Rewind SID: a new revision equal to revision --to (history is kept)."""
    with engine(db, as_json, seed=False, durability=durability) as eng:
        head = eng.driver.rollback(sid, to)
        if as_json:
            emit(revision_json(head, full=False))
        else:
            click.echo(f"{sid}: rev {head.rev} = rev {to} ({head.fsm})")


@main.command()
@click.argument("sid")
@click.option("--at", "at", type=int, required=True, help="Revision the fork starts from.")
@db_option
@json_option
@durability_option
def fork(sid: str, at: int, db: str, as_json: bool, durability: str) -> None:
    """Fork SID at revision --at into a new session; prints the new id."""
    with engine(db, as_json, seed=False, durability=durability) as eng:
        head = eng.driver.fork(sid, at)
        if as_json:
            emit(revision_json(head, full=False))
        else:
            click.echo(head.sid)


@main.command()
@click.argument("name")
@json_option
def skill(name: str, as_json: bool) -> None:
    """Run skill NAME on the input JSON read from stdin; print its envelope.

    Exit 0 when s is ok, 1 otherwise. NAME: parse_claim, evidence_query_plan,
    tool_request_compose, retrieve, evidence_extract, stance_judge, verdict_aggregate.
    """
    skills = all_skills()
    if name not in skills:
        env = Envelope.error("UNKNOWN_SKILL", f"name: no skill {name!r} "
                             f"(known: {', '.join(skills)})")
    else:
        env = skills[name].run(sys.stdin.buffer.read(), SkillContext())
    click.echo(env.to_json().decode())
    sys.exit(0 if env.s == "ok" else 1)


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--source", type=click.Choice(["wiki", "web", "news"]), default=None,
              help="Source tag for every document (default: each line's `source`, else wiki).")
@click.option("--kb", is_flag=True, help="FILE holds knowledge-base facts, not documents.")
@db_option
@json_option
def ingest(file: Path, source: str | None, kb: bool, db: str, as_json: bool) -> None:
    """Add documents ({"id","title","text"} per line) to the evidence index."""
    from skills.tools.ingest import ingest_documents, ingest_facts

    with engine(db, as_json, seed=False) as eng:
        total = max(1, file.stat().st_size)
        show_bar = sys.stderr.isatty() and not as_json
        with click.progressbar(length=total, label=f"ingest {file.name}", file=sys.stderr,
                               hidden=not show_bar) as bar:
            done = [0]

            def progress(read: int, _total: int) -> None:
                bar.update(read - done[0])
                done[0] = read

            if kb:
                report = ingest_facts(eng.index, file, on_progress=progress)
            else:
                report = ingest_documents(eng.index, file, source=_source(source),
                                          on_progress=progress)
        errors = [{"line": e.line, "msg": e.msg} for e in report.errors]
        if as_json:
            emit({"added": report.added, "errors": errors, "lines": report.lines})
        else:
            for e in errors:
                click.echo(f"line {e['line']}: {e['msg']} (skipped)", err=True)
            click.echo(f"added {report.added} of {report.lines} lines; {len(errors)} skipped")


def _source(value: str | None) -> Source | None:
    for s in SOURCES:
        if s == value:
            return s
    return None


@main.command()
def diagram() -> None:
    """Print the machine as a Mermaid stateDiagram-v2 (generated from its definition)."""
    click.echo(mermaid(DEFAULT_MACHINE), nl=False)


@main.command()
@db_option
def demo(db: str) -> None:
    """Verify the bundled demo claims on the demo corpus and show how each went.

    One supported, one refuted and one not-enough-info claim are shown step by step; every
    demo claim then appears in a table with its expected and actual verdict.
    """
    from fsm.runtime import FIXTURES

    claims = orjson.loads((FIXTURES / "demo_claims.json").read_bytes())
    shown: set[str] = set()
    rows: list[tuple[str, str, str, int]] = []
    with engine(db, False) as eng:
        click.echo(f"evidence index: {eng.index.count_documents()} documents, "
                   f"{eng.index.count_facts()} facts ({db})\n")
        for item in claims:
            detail = item["expected"] not in shown
            eng.driver.on_step = _print_step if detail else None
            if detail:
                shown.add(item["expected"])
                click.echo(f"== {item['claim']}")
            head = eng.driver.start(item["claim"])
            if detail:
                click.echo(revision_line(head))
            head = eng.driver.run(head.sid)
            if detail:
                click.echo("\n".join(session_summary(head)) + "\n")
            verdict = head.state.verdict["label"] if head.state.verdict else head.fsm
            rows.append((item["claim"], item["expected"], verdict, head.rev))
    width = max(len(r[0]) for r in rows)
    click.echo(f"{'claim':<{width}}  {'expected':<16} {'verdict':<16} revs")
    for claim, expected, verdict, revs in rows:
        mark = "" if expected == verdict else "  <- differs"
        click.echo(f"{claim:<{width}}  {expected:<16} {verdict:<16} {revs}{mark}")
    right = sum(1 for r in rows if r[1] == r[2])
    click.echo(f"\n{right}/{len(rows)} demo claims as expected; sessions kept in {db} "
               "(try: claimfsm history SID --db " + db + ")")


# Commands from sibling modules are attached below, one line each:
# main.add_command(<module>.<command>)
main.add_command(cli_bench.bench)
main.add_command(cli_bench.fsck)
main.add_command(cli_bench.compact)
main.add_command(cli_replay.replay)
main.add_command(cli_replay.export)
main.add_command(cli_eval.eval_command)
main.add_command(cli_train.train_command)
