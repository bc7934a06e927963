"""Shared pieces of the CLI: options, JSON output, clean error exits, the engine context.

Command modules (``fsm/cli/main.py`` and its siblings) import from here, never from each other.
"""

from __future__ import annotations

import functools
import getpass
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import orjson

from claimfsm._base.errors import exit_status
from claimfsm.cli.model_options import model_options
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.engine.model_profile import MODEL_KEYS
from claimfsm.engine.profile import Profile, ProfileError, resolve_profile
from claimfsm.engine.views import revision_line

if TYPE_CHECKING:  # the engine (skills, tools, index) loads only for commands that run it
    from claimfsm.engine.config import Durability
    from claimfsm.engine.driver import StepResult
    from claimfsm.engine.runtime import Engine
    from claimfsm.skills.tools.index import EvidenceIndex
    from claimfsm.state.open import Location
    from claimfsm.state.store import StateStore

__all__ = [
    "actor_option", "actor_or_login", "better_profile", "db_option", "durability_option",
    "emit", "engine", "existing_store", "fail",
    "json_option", "on_version_option", "print_step", "profile_from", "profile_options",
    "readonly_index", "record_option", "store",
]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_MODEL = ".cache/stance.npz"
"""Where ``make train`` writes the learned judge (relative to the working directory)."""

db_option = click.option(
    "--db", "db", default="claimfsm.db", show_default=True, type=click.Path(dir_okay=False),
    help="SQLite file holding sessions and the evidence index, or a postgresql:// URL "
    "(sessions in PostgreSQL, evidence index in its ?index=FILE or "
    "?index=postgresql://... parameter, else the demo corpus in memory).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
record_option = click.option(
    "--record", "record", default=None, type=click.Path(dir_okay=False),
    help="Write the session record (JSONL) to this file; `step` appends to it.",
)
durability_option = click.option(
    "--durability", type=click.Choice(["full", "normal", "group"]), default="normal",
    show_default=True,
    help="SQLite durability: full = fsync per commit; normal = WAL, synced at checkpoints "
    "(a power cut may lose the last commits, never corrupt); group = batched fsyncs.",
)
on_version_option = click.option(
    "--on-version", "on_version", type=click.Choice(["refuse", "continue"]), default="refuse",
    show_default=True,
    help="A session started on another version of the machine: refuse it "
    "(VERSION_MISMATCH), or continue it on this one (recorded as a VersionContinued "
    "revision). Sessions older than versions run either way; see docs/versioning.md.",
)


_retrieval = click.option(
    "--retrieval", "retrieval", type=click.Choice(["lexical", "hybrid"]), default=None,
    help="Evidence retrieval: lexical = BM25; hybrid = BM25 fused with sentence embeddings "
    "(needs the 'semantic' extra). Default: the config file's, else lexical.",
)
_judge = click.option(
    "--judge", "judge", type=click.Choice(["lexical", "learned", "model"]), default=None,
    help="Stance judge: lexical rules, the learned model of --stance-model, or a language "
    "model (--model-url, --model). Default: the config file's, else lexical (learned when "
    "--stance-model is given).",
)
_stance_model = click.option(
    "--stance-model", "stance_model", default=None, metavar="MODEL.npz",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A learned stance model from `claimfsm train`; implies --judge learned.",
)


def profile_options(fn: F) -> F:
    """Add ``--retrieval``, ``--judge``, ``--stance-model`` and the model options
    (:func:`claimfsm.cli.model_options.model_options`); the command receives them
    as one ``profile`` argument (a mapping of the options given) for :func:`profile_from`
    or :func:`engine`. Defaults come from ``claimfsm.toml`` / ``[tool.claimfsm]``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, retrieval: str | None, judge: str | None,
                stance_model: Path | None, **kwargs: Any) -> Any:
        opts = {"retrieval": retrieval, "judge": judge, "stance_model": stance_model}
        opts.update({key: kwargs.pop(key) for key in MODEL_KEYS})
        return fn(*args, profile=opts, **kwargs)

    return _retrieval(_judge(_stance_model(model_options(wrapper))))  # type: ignore[return-value]


def profile_from(options: Mapping[str, Any], *, as_json: bool) -> Profile:
    """The profile the options and the config file resolve to; a clean exit when bad."""
    try:
        return resolve_profile(options)
    except ProfileError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        raise  # unreachable: fail exits


def better_profile(profile: Profile) -> str | None:
    """One line naming a better profile that is installed here, or ``None``."""
    from claimfsm.skills.embed import semantic_available

    if profile.retrieval == "lexical" and semantic_available():
        return ("hint: hybrid retrieval is installed and finds more evidence: "
                "--retrieval hybrid (or retrieval = \"hybrid\" in claimfsm.toml)")
    if profile.judge == "lexical" and Path(DEFAULT_MODEL).is_file():
        return (f"hint: a trained stance model is at {DEFAULT_MODEL}: "
                f"--stance-model {DEFAULT_MODEL} judges better than the lexical rules")
    return None


_MAX_ACTOR = 200

actor_option = click.option(
    # Checked by the engine (BAD_INPUT, field actor) before anything is written.
    "--actor", default=None, metavar="NAME",
    help="Who asks for it (1 to 200 characters), recorded in each revision it commits "
         "(default: nobody is recorded).")


def actor_or_login(actor: str | None, as_json: bool) -> str:
    """``--actor`` checked (1 to 200 characters, else ``BAD_INPUT``), or the login name
    when it is not given: who deletes a session or adds or revokes a key is always
    recorded."""
    if actor is None:
        try:
            return getpass.getuser()
        except (KeyError, OSError):  # no login name (a container without a passwd entry)
            return "unknown"
    if not actor.strip() or len(actor) > _MAX_ACTOR:
        fail("BAD_INPUT", f"--actor: give a name of 1 to {_MAX_ACTOR} characters",
             as_json=as_json)
    return actor


def emit(obj: Any) -> None:
    """Print one JSON document (orjson, keys in insertion order)."""
    click.echo(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode())


def fail(code: str, msg: str, *, as_json: bool) -> None:
    """Report an error with its code and exit with the code's status (``ErrorCode``'s
    table; no traceback)."""
    if as_json:
        emit({"error": {"code": code, "msg": msg}})
    else:
        click.echo(f"error: {code}: {msg}", err=True)
    sys.exit(exit_status(code))


def _sources() -> dict[str, Any] | None:
    # [sources.NAME] of the config file; the file is parsed only when there is one.
    from claimfsm.engine.sources import find_sources

    return find_sources() or None


@contextmanager
def engine(db: str | Location, as_json: bool, *, profile: Mapping[str, Any] | None = None,
           on_step: Callable[[StepResult], None] | None = None,
           durability: Durability = "normal", seed: bool = True,
           create: bool = True, on_version: str = "refuse") -> Iterator[Engine]:
    """Open the engine and turn contract errors into clean exits. ``db`` is parsed here,
    once (a command that has parsed it already passes the location). ``profile`` (the
    options of :func:`profile_options`) is resolved against the config file; without it
    the engine runs sessions with the profile each one stored. The other options are
    :class:`~claimfsm.engine.config.EngineConfig` fields. The stores turn their database's
    own errors (a damaged file, a read-only one) into ``STORE_*`` codes, so every error
    here is a ``ClaimFsmError`` or the system's ``OSError``."""
    from claimfsm.engine.config import EngineConfig
    from claimfsm.engine.runtime import Engine
    from claimfsm.state.open import locate

    try:
        where = locate(db)
        prof = resolve_profile(profile) if profile is not None else Profile.default()
        # click checked every option already: no validator to compile on start-up.
        config = EngineConfig.trusted(profile=prof, on_step=on_step, durability=durability,
                                      seed=seed, create=create, on_version=on_version,
                                      sources=_sources())
        eng = Engine.open(where, config=config)
        for warning in eng.warnings:
            click.echo(f"warning: {warning}", err=True)
    except (ClaimFsmError, OSError) as exc:
        fail(getattr(exc, "code", "OPEN_FAILED"), str(exc), as_json=as_json)
        raise  # unreachable: fail exits
    try:
        yield eng
    except ClaimFsmError as exc:
        fail(exc.code, str(exc), as_json=as_json)
    finally:
        eng.close()


@contextmanager
def store(db: str, as_json: bool) -> Iterator[StateStore]:
    """Open only the session store of ``db`` (for commands that read revisions: no
    skills, tools or evidence index to load), with :func:`engine`'s clean exits."""
    from claimfsm.state.open import open_store

    try:
        opened = open_store(db, readonly=True)  # its one parse of db
    except (ClaimFsmError, OSError) as exc:
        fail(getattr(exc, "code", "OPEN_FAILED"), str(exc), as_json=as_json)
        raise  # unreachable: fail exits
    try:
        yield opened
    except ClaimFsmError as exc:
        fail(exc.code, str(exc), as_json=as_json)
    finally:
        opened.close()


@contextmanager
def existing_store(db: str, as_json: bool, *, readonly: bool = False) -> Iterator[StateStore]:
    """Open the session store of ``db`` for a command that maintains it (``fsck``,
    ``compact``, ``delete``, ``prune``): a ``--db`` that does not exist is refused, never
    created empty, with :func:`engine`'s clean exits."""
    from claimfsm.state.open import open_store

    try:
        opened = open_store(db, create=False, readonly=readonly)
    except (ClaimFsmError, OSError) as exc:
        msg = str(exc)
        fail(getattr(exc, "code", "OPEN_FAILED"), msg if msg.startswith("--db") else f"--db: {msg}",
             as_json=as_json)
        raise  # unreachable: fail exits
    try:
        yield opened
    except ClaimFsmError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
    finally:
        opened.close()


@contextmanager
def readonly_index(path: str | None, as_json: bool) -> Iterator[EvidenceIndex]:
    """The evidence index in the SQLite file ``path``, read without writing a byte of
    any file (``None``, a missing file or one without an index: an empty index in
    memory); another program's database is refused (``STORE_FOREIGN``), with
    :func:`engine`'s clean exits."""
    import sqlite3

    from claimfsm._base.sqlite import sqlite_failure
    from claimfsm._base.sqlite_read import ReadOnlyLink
    from claimfsm.skills.tools.index import EvidenceIndex
    from claimfsm.state.sqlite.probe import ForeignStore, probe

    link: ReadOnlyLink | None = None
    try:
        if path is not None and path.startswith(("postgresql://", "postgres://")):
            from claimfsm.skills.tools.index_pg import PgEvidenceIndex  # a shared index

            index: EvidenceIndex = PgEvidenceIndex.open(path)
            kind = "server"
        else:
            kind = "missing" if path is None else probe(path)
        if kind == "foreign":
            raise ForeignStore(f"--db: {path} is another program's SQLite database (no "
                               "claimfsm tables); claimfsm will not read it as an index",
                               field="db")
        if path is not None and kind not in ("missing", "server") \
                and Path(path).stat().st_size > 0:
            link = ReadOnlyLink(path)
            names = link.run(lambda c: {r[0] for r in c.execute(
                "SELECT name FROM sqlite_master WHERE name LIKE 'ev_%'")})
            if "ev_docs" not in names:
                link.close()
                link = None
            elif not {"ev_vectors", "ev_text_vectors"} <= names:
                # An index from before its vector tables: read a private copy, where
                # the index may add them.
                link.close()
                link = ReadOnlyLink(path, private=True)
        if kind != "server":
            index = (EvidenceIndex(link.connection) if link is not None
                     else EvidenceIndex.open(":memory:"))
    except (ClaimFsmError, OSError) as exc:
        if link is not None:
            link.close()
        fail(getattr(exc, "code", "OPEN_FAILED"), str(exc), as_json=as_json)
        raise  # unreachable: fail exits
    except sqlite3.Error as exc:
        if link is not None:
            link.close()
        fail(*sqlite_failure(exc, path or ":memory:"), as_json=as_json)
        raise  # unreachable: fail exits
    try:
        yield index
    finally:
        index.close()
        if link is not None:
            link.close()  # and a private copy with it


def print_step(result: StepResult) -> None:
    """One line for a step: the committed revision, or the refused envelope's code."""
    if result.revision is not None:
        click.echo(revision_line(result.revision, result.before))
    elif result.envelope.e is not None:
        click.echo(f"   -  {result.before:<26} {result.skill or '-':<18} "
                   f"{result.envelope.s} {result.envelope.e.code}: {result.envelope.e.msg}")
