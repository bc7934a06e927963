"""How a JSONL file of the evidence index becomes records: each non-blank line a
:class:`~.documents.Document`, a :class:`~.documents.Fact` or an
:class:`~.ingest_report.IngestError` naming its line, its code and its field, read with a
bound on the length of a line.

Its own module because parsing and reading lines is one job that the loads of
:mod:`.ingest` (which re-exports :class:`FieldMap`) only consume: what a line must hold,
and how a line too long or a file unreadable is reported, are decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict

from claimfsm.skills.tools.bounded import Bounds, OverLimit, read_lines
from claimfsm.skills.tools.documents import SOURCES, Document, Fact, Source
from claimfsm.skills.tools.ingest_report import IngestError

__all__ = ["FieldMap"]

T = TypeVar("T", Document, Fact)


class FieldMap(BaseModel):
    """Which JSON fields hold a document's id, title and text. ``title=None`` takes
    ``"title"``, else ``"article"`` (the Climate-FEVER corpus)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    id: str = "id"
    title: str | None = None
    text: str = "text"


_JSON_TYPES: dict[type, str] = {
    type(None): "null", bool: "boolean", int: "number", float: "number",
    list: "array", dict: "object", str: "string",
}


def _string(n: int, obj: dict[str, Any], name: str) -> str | IngestError:
    if name not in obj:
        return IngestError(line=n, code="MISSING_FIELD", field=name,
                           msg=f"missing field {name!r}")
    value = obj[name]
    if not isinstance(value, str):
        kind = _JSON_TYPES.get(type(value), type(value).__name__)
        return IngestError(line=n, code="WRONG_TYPE", field=name,
                           msg=f"field {name!r}: expected a string, got {kind}")
    if not value.strip():
        return IngestError(line=n, code="EMPTY_FIELD", field=name, msg=f"field {name!r} is empty")
    return value


def _object(n: int, raw: bytes) -> dict[str, Any] | IngestError:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return IngestError(line=n, code="BAD_JSON", msg=f"malformed JSON: {exc}")
    if not isinstance(obj, dict):
        kind = _JSON_TYPES.get(type(obj), type(obj).__name__)
        return IngestError(line=n, code="NOT_OBJECT", msg=f"expected a JSON object, got {kind}")
    return obj


def _fields(n: int, raw: bytes | dict[str, Any],
            names: Sequence[str]) -> dict[str, str] | IngestError:
    obj = _object(n, raw) if isinstance(raw, bytes) else raw
    if isinstance(obj, IngestError):
        return obj
    out: dict[str, str] = {}
    for name in names:
        value = _string(n, obj, name)
        if isinstance(value, IngestError):
            return value
        out[name] = value
    if "source" in obj and "source" not in names:
        source = _string(n, obj, "source")
        if isinstance(source, IngestError):
            return source
        out["source"] = source
    return out


def _parse_document(
    source: Source | None, fields: FieldMap | None = None
) -> Callable[[int, bytes], Document | IngestError]:
    """``source=None``: each line's own ``source`` (wiki|web|news), else ``wiki``."""
    fm = fields or FieldMap()

    def parse(n: int, raw: bytes) -> Document | IngestError:
        obj = _object(n, raw)
        if isinstance(obj, IngestError):
            return obj
        title = fm.title or ("article" if "title" not in obj and "article" in obj
                             else "title")
        f = _fields(n, obj, (fm.id, title, fm.text))
        if isinstance(f, IngestError):
            if f.code == "MISSING_FIELD" and f.field == "title" and fm.title is None:
                return f.model_copy(update={"msg": "missing field 'title' (or 'article'; "
                                                   "other names: --title-field)"})
            return f
        src = source or f.get("source", "wiki")
        if src not in SOURCES:
            return IngestError(line=n, code="BAD_SOURCE", field="source",
                               msg=f"field 'source': {src!r} is not one of {', '.join(SOURCES)}")
        return Document(doc_id=f[fm.id], title=f[title], text=f[fm.text], source=src)

    return parse


def _parse_corpus(source: Source) -> Callable[[int, bytes], Document | IngestError]:
    def parse(n: int, raw: bytes) -> Document | IngestError:
        f = _fields(n, raw, ("id", "article", "text"))
        if isinstance(f, IngestError):
            return f
        return Document(doc_id=f["id"], title=f["article"], text=f["text"], source=source)

    return parse


def _parse_fact(n: int, raw: bytes) -> Fact | IngestError:
    f = _fields(n, raw, ("id", "subject", "relation", "object"))
    if isinstance(f, IngestError):
        return f
    return Fact(id=f["id"], subject=f["subject"], relation=f["relation"], object=f["object"],
                source=f.get("source", "kb"))


def _records(
    path: str | Path, parse: Callable[[int, bytes], T | IngestError], max_line: int
) -> Iterator[tuple[int, int, T | IngestError]]:
    """``(line, bytes_read, record)`` for every non-blank line. A line longer than
    ``max_line`` bytes is reported and ends the reading: nothing reads without bound (a
    file with no newline at all, like ``/dev/zero``, costs ``max_line`` bytes)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below, after the yield
    except OSError as exc:
        yield 0, 0, IngestError(line=0, code="UNREADABLE",
                                msg=f"cannot read {path}: {exc.strerror or exc}")
        return
    with handle:
        pos = 0
        try:
            for n, pos, raw in read_lines(handle, Bounds(line=max_line)):
                if raw.strip():
                    yield n, pos, parse(n, raw)
        except OverLimit as over:
            n = over.line
            yield n, pos, IngestError(
                line=n, code="INPUT_TOO_LARGE",
                msg=f"line {n}: more than {max_line} bytes (raise --max-doc-bytes); "
                "the rest of the file is not read")
        except OSError as exc:  # a read error mid-file (EIO, a vanished network file)
            yield 0, pos, IngestError(line=0, code="UNREADABLE",
                                                msg=f"cannot read {path}: {exc.strerror or exc}")


# A JSONL line holds the text plus its id, title, source and JSON escaping.
_LINE_SLACK = 64 * 1024
