"""``claimfsm ingest``: documents or knowledge-base facts into the evidence index."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fsm.cli.common import db_option, emit, engine, fail, json_option
from skills.tools.index import SOURCES, Source
from state.open import locate

__all__ = ["ingest"]


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--source", type=click.Choice(["wiki", "web", "news"]), default=None,
              help="Source tag for every document (default: each line's `source`, else wiki).")
@click.option("--kb", is_flag=True, help="FILE holds knowledge-base facts, not documents.")
@db_option
@json_option
def ingest(file: Path, source: str | None, kb: bool, db: str, as_json: bool) -> None:
    """Add documents ({"id","title","text"} per line) to the evidence index."""
    from skills.tools.ingest import ingest_documents, ingest_facts

    if locate(db).index is None:
        fail("NO_INDEX", "--db: a postgresql:// URL keeps the evidence index in a SQLite file; "
             "name it with ?index=FILE in the URL", as_json=as_json)
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
