"""Commands for people in the loop: input, resume, edit, tick; and the options that make
sessions wait (``--review``, ``--pause-before``, ``--pause-after``). See docs/review.md."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson

from claimfsm.cli.common import db_option, durability_option, emit, engine, fail, json_option
from claimfsm.cli.observing import log_format_option
from claimfsm.engine.views import session_summary, verdict_json

if TYPE_CHECKING:
    from claimfsm.engine.config import Durability
    from claimfsm.engine.runtime import Engine
    from claimfsm.engine.tick import TickReport
    from claimfsm.replay.write import Recorder
    from claimfsm.state.model import Revision

__all__ = ["edit", "finish", "input_command", "people_options", "resume", "tick"]

F = TypeVar("F", bound=Callable[..., Any])

_STATES = "PARSE_CLAIM,RETRIEVAL,EXTRACT,VERIFY,AGGREGATE"


def _states(value: str | None) -> list[str] | None:
    return None if value is None else [s.strip() for s in value.split(",") if s.strip()]


def people_options(fn: F) -> F:
    """Add ``--review``, ``--pause-before`` and ``--pause-after`` to a command that takes
    ``profile`` (the mapping of :func:`~claimfsm.cli.common.profile_options`): they are
    profile options, so ``claimfsm.toml`` may set them too."""

    @functools.wraps(fn)
    def wrapper(*args: Any, review: str | None, pause_before: str | None,
                pause_after: str | None, profile: dict[str, Any], **kwargs: Any) -> Any:
        people = {"review": review, "pause_before": _states(pause_before),
                  "pause_after": _states(pause_after)}
        return fn(*args, profile={**profile, **people}, **kwargs)

    options = (
        click.option("--review", type=click.Choice(["never", "low_confidence", "always"]),
                     default=None, help="When the verdict waits in REVIEW for a person "
                     "(default: never; low_confidence: NOT_ENOUGH_INFO, DISPUTED or a "
                     "subclaim judged below 0.6)."),
        click.option("--pause-before", metavar="STATE[,STATE...]", default=None,
                     help=f"Pause on entering these states ({_STATES}); "
                     "`claimfsm resume SID` continues."),
        click.option("--pause-after", metavar="STATE[,STATE...]", default=None,
                     help="Pause after leaving these states."),
    )
    out: Any = wrapper
    for option in reversed(options):
        out = option(out)
    return out  # type: ignore[no-any-return]


def finish(eng: Engine, head: Revision, as_json: bool) -> None:
    """Print where a session stopped (``verify --json``'s shape) and exit: 0 at DONE, 3
    when it waits (code ``WAITING``, its id and what for on stderr), 1 otherwise."""
    data = verdict_json(head)
    if as_json:
        emit(data)
    else:
        click.echo("\n".join(session_summary(head)))
    if data["status"] == "WAITING":
        if not as_json:
            waits = data.get("waiting") or {}
            what = (f"input ({waits.get('input')}) in {waits.get('state')}"
                    if waits.get("kind") == "input"
                    else f"resume (paused {waits.get('when')} {waits.get('state')})")
            click.echo(f"WAITING: session {head.sid} waits for {what}; see "
                       f"`claimfsm show {head.sid}`", err=True)
        sys.exit(3)
    if head.fsm != "DONE":
        sys.exit(1)


def _payload(as_text: str | None, path: Path | None, as_json: bool) -> Any:
    if (as_text is None) == (path is None):
        fail("BAD_INPUT", "give the input as --json JSON or --file F (one of them)",
             as_json=as_json)
    try:
        raw = as_text.encode() if as_text is not None else path.read_bytes()  # type: ignore[union-attr]
        return orjson.loads(raw)
    except OSError as exc:
        fail("BAD_INPUT", f"--file: {exc.strerror}: {path}", as_json=as_json)
    except orjson.JSONDecodeError as exc:
        fail("BAD_INPUT", f"input: not JSON ({exc})", as_json=as_json)


_record = click.option(
    "--record", "record", default=None, type=click.Path(dir_okay=False),
    help="Append this revision (a person line) and the steps that follow to the session's "
    "record F (made by `verify --record F`): F must be this session's record and end at "
    "its head (else RECORD_MISMATCH); a missing or empty F first gets the session so far.")


def _recorded(eng: Engine, sid: str, record: str | None, expected_rev: int | None,
              as_json: bool) -> tuple[Any, int | None, Revision | None]:
    """The recorder for ``--record`` (checked before anything is committed), the
    ``expected_rev`` to commit with, and the head the record ends at."""
    if record is None:
        return None, expected_rev, None
    from claimfsm.cli.replay import recorder_for_session

    rec = recorder_for_session(record, eng, sid, as_json)
    head = eng.store.head(sid)
    # The record ends at this head: the person's revision must follow it directly.
    return rec, head.rev if expected_rev is None else expected_rev, head


def _commit_recorded(eng: Engine, rec: Any, parent: Revision | None, rev: Revision) -> None:
    if rec is not None and parent is not None:
        rec.person(parent, rev)
        eng.driver.on_step = rec


_actor = click.option("--actor", default="cli", show_default=True,
                      help="Who gives it (any non-empty name; recorded in the event).")
_expected = click.option("--expected-rev", type=int, default=None,
                         help="Refuse (REV_CONFLICT) unless the head is still this revision.")


@click.command("input")
@click.argument("sid")
@click.option("--json", "as_text", metavar="JSON", default=None,
              help="The input as JSON text, e.g. '{\"decision\": \"approve\"}'.")
@click.option("--file", "path", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="Read the input JSON from this file.")
@_expected
@_actor
@db_option
@click.option("--json-out", "as_json", is_flag=True, help="Print JSON for scripts.")
@durability_option
@_record
def input_command(sid: str, as_text: str | None, path: Path | None, expected_rev: int | None,
                  actor: str, db: str, as_json: bool, durability: Durability,
                  record: str | None) -> None:
    """Give session SID the input its wait state waits for (REVIEW: approve, override
    with a reason, or send back) and run it on to its next stop.

    The input is validated against the state's input model (BAD_INPUT names the field)
    and committed as one revision with an InputReceived event. REV_CONFLICT for a stale
    --expected-rev, NOT_WAITING when the session does not wait for input. Exits as
    verify does: 0 at DONE, 3 when it waits again, 1 otherwise.
    """
    payload = _payload(as_text, path, as_json)
    with engine(db, as_json, durability=durability, create=False) as eng:
        rec, expected_rev, parent = _recorded(eng, sid, record, expected_rev, as_json)
        rev = eng.driver.input(sid, payload, expected_rev=expected_rev, actor=actor)
        _commit_recorded(eng, rec, parent, rev)
        finish(eng, eng.driver.run(sid), as_json)


@click.command()
@click.argument("sid")
@_expected
@_actor
@db_option
@json_option
@durability_option
@_record
def resume(sid: str, expected_rev: int | None, actor: str, db: str, as_json: bool,
           durability: Durability, record: str | None) -> None:
    """Continue paused session SID (a Resumed revision) and run it on to its next stop.
    NOT_WAITING when it is not paused. Exits as verify does (3: it paused again)."""
    with engine(db, as_json, durability=durability, create=False) as eng:
        rec, expected_rev, parent = _recorded(eng, sid, record, expected_rev, as_json)
        rev = eng.driver.resume(sid, expected_rev=expected_rev, actor=actor)
        _commit_recorded(eng, rec, parent, rev)
        finish(eng, eng.driver.run(sid), as_json)


def _change(text: str) -> tuple[str, Any]:
    field, sep, value = text.partition("=")
    if not sep or not field:
        raise click.BadParameter(f"{text!r}: expected FIELD=JSON", param_hint="--set")
    try:
        return field, orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise click.BadParameter(f"{field}: not JSON ({exc})", param_hint="--set") from None


@click.command()
@click.argument("sid")
@click.option("--set", "changes", metavar="FIELD=JSON", multiple=True, required=True,
              help="A field and its new value: subclaims=[...], plans=[...] or "
              "evidence.<subclaim id>=[...]. Repeat for several (one revision).")
@_actor
@_expected
@db_option
@json_option
@durability_option
@_record
def edit(sid: str, changes: tuple[str, ...], actor: str, expected_rev: int | None, db: str,
         as_json: bool, durability: Durability, record: str | None) -> None:
    """Change editable fields of waiting or paused session SID: one revision with an
    Edited event listing old and new values; the session keeps waiting. Anything else
    is NOT_EDITABLE; a value of the wrong shape is BAD_INPUT."""
    from claimfsm.engine.views import revision_json

    try:
        parsed = [_change(c) for c in changes]
    except click.BadParameter as exc:
        fail("BAD_INPUT", exc.format_message(), as_json=as_json)
        return
    with engine(db, as_json, durability=durability, create=False) as eng:
        rec, expected_rev, parent = _recorded(eng, sid, record, expected_rev, as_json)
        rev = eng.driver.edit(sid, parsed, expected_rev=expected_rev, actor=actor)
        _commit_recorded(eng, rec, parent, rev)
        if as_json:
            emit(revision_json(rev, full=False))
        else:
            for change in rev.events[0]["changes"]:
                click.echo(f"{rev.rev:>4}  edited {change['field']} (by {actor})")


@click.command()
@db_option
@click.option("--limit", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Advance at most this many due sessions (earliest first).")
@json_option
@durability_option
@click.option("--record", "record", default=None, type=click.Path(dir_okay=False),
              help="The record F of one session (made by `verify --record F`): if the tick "
              "advances that session, its timeout (a person line) or due retry and the "
              "steps that follow are appended to F. F must end at the session's head "
              "(else RECORD_MISMATCH).")
@log_format_option
def tick(db: str, limit: int, as_json: bool, durability: Durability,
         record: str | None, log_format: str | None) -> None:
    """Advance every session that is due: a wait state whose timeout passed moves to its
    on_timeout state, a retry whose time came runs; each then runs on to its next stop.
    Several tickers may race: each due session is advanced exactly once. Prints
    {"due", "advanced", "skipped", "sids", "conflicts"} with --json (conflicts: the
    skipped sessions another writer moved first). With --log-format, each step is
    logged (sid, rev, code) on stderr and then one "tick" line with the counts."""
    handler = None
    if log_format is not None:
        from claimfsm.observe.logs import setup_logging

        handler = setup_logging("json" if log_format == "json" else "text")
    try:
        report = _tick_logged(db, as_json, durability, limit, record, log_format is not None)
    finally:
        if handler is not None:
            from claimfsm.observe.logs import stop_logging

            stop_logging(handler)
    if as_json:
        emit(report.to_json())
    else:
        click.echo(f"due {report.due}, advanced {report.advanced}, "
                   f"skipped {report.skipped}")


def _tick_logged(db: str, as_json: bool, durability: Durability, limit: int,
                 record: str | None, logged: bool) -> TickReport:
    from claimfsm.engine.tick import tick as run_tick
    from claimfsm.replay.people import tick_recorded

    with engine(db, as_json, durability=durability, create=False) as eng:
        if logged:
            from claimfsm.observe.logs import log_event
            from claimfsm.observe.observer import Observer

            eng.driver.observer = Observer()  # one "step" line per step
        if record is None:
            report = run_tick(eng.driver, limit=limit)
        else:
            rec, recorded = _tick_recorder(eng, record, as_json)
            report = tick_recorded(eng.driver, rec, recorded, limit=limit)
        if logged:
            log_event("tick", due=report.due, advanced=report.advanced,
                      skipped=report.skipped)
        return report


def _tick_recorder(eng: Engine, record: str, as_json: bool) -> tuple[Recorder, str]:
    """The recorder of ``tick --record F`` and the session F records."""
    from claimfsm.cli.replay import recorder_for_session
    from claimfsm.replay.record import RecordError, read_record

    try:
        sid = read_record(Path(record)).header.sid
    except (RecordError, OSError) as exc:
        fail("RECORD_MISMATCH", f"--record {record}: not a session record ({exc})",
             as_json=as_json)
        raise  # unreachable: fail exits
    return recorder_for_session(record, eng, sid, as_json), sid
