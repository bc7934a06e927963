"""JSONL ingest: bad lines reported by number, good lines always land."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from claimfsm.skills.tools.index import Document, EvidenceIndex, Fact
from claimfsm.skills.tools.ingest import (
    IngestError,
    ingest_corpus,
    ingest_documents,
    ingest_facts,
    read_corpus,
    read_corpus_sentences,
    read_documents,
    read_facts,
)

DOCS = b"""\
{"id": "d1", "title": "Glacier", "text": "Glaciers retreat as the climate warms."}

{"id": "d2", "title": "Ocean", "text": "Oceans absorb heat.", "url": "ignored"}
{"id": "d3", "title": "Broken", "text": "unterminated
{"id": "d4", "text": "No title here."}
{"id": "d5", "title": "Empty", "text": "   "}
{"id": 6, "title": "Numeric id", "text": "Ids must be strings."}
["not", "an", "object"]
{"id": "d9", "title": "Ice", "text": "Sea ice thins."}
{"id": "d10", "title": null, "text": "Null title."}
"""


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.fixture
def index() -> EvidenceIndex:
    return EvidenceIndex(sqlite3.connect(":memory:"))


def test_read_documents_reports_each_bad_line(tmp_path: Path) -> None:
    rows = list(read_documents(write(tmp_path, "docs.jsonl", DOCS)))
    assert [n for n, _ in rows] == [1, 3, 4, 5, 6, 7, 8, 9, 10]  # line 2 is blank
    good = {n: r for n, r in rows if isinstance(r, Document)}
    bad = {n: r for n, r in rows if isinstance(r, IngestError)}
    assert good == {
        1: Document(doc_id="d1", title="Glacier", text="Glaciers retreat as the climate warms."),
        3: Document(doc_id="d2", title="Ocean", text="Oceans absorb heat."),
        9: Document(doc_id="d9", title="Ice", text="Sea ice thins."),
    }
    assert {n: (e.line, e.code, e.field) for n, e in bad.items()} == {
        4: (4, "BAD_JSON", None),
        5: (5, "MISSING_FIELD", "title"),
        6: (6, "EMPTY_FIELD", "text"),
        7: (7, "WRONG_TYPE", "id"),
        8: (8, "NOT_OBJECT", None),
        10: (10, "WRONG_TYPE", "title"),
    }
    assert "'title'" in bad[5].msg
    assert "'text'" in bad[6].msg
    assert "'id'" in bad[7].msg and "number" in bad[7].msg
    assert "array" in bad[8].msg
    assert "null" in bad[10].msg


def test_ingest_keeps_good_lines_and_reports_bad_ones(
    tmp_path: Path, index: EvidenceIndex
) -> None:
    path = write(tmp_path, "docs.jsonl", DOCS)
    progress: list[tuple[int, int]] = []
    report = ingest_documents(index, path, source="news", batch=2,
                              on_progress=lambda done, total: progress.append((done, total)))
    assert report.added == 3
    assert report.lines == 9
    assert [e.line for e in report.errors] == [4, 5, 6, 7, 8, 10]
    assert report.added + len(report.errors) == report.lines
    assert index.count_documents() == 3
    assert index.sources() == {"news": 3}
    assert index.get_document("d9") == Document(doc_id="d9", title="Ice",
                                                text="Sea ice thins.", source="news")
    assert [h.doc_id for h in index.search("glacier")] == ["d1"]
    # Progress: once per full batch of 2 (d1, d2: after line 3), then at the end (d9).
    size = path.stat().st_size
    assert [t for _, t in progress] == [size] * 2
    done = [d for d, _ in progress]
    assert done == sorted(done) and done[-1] == size and done[0] < size


def test_batch_size_does_not_change_the_outcome(tmp_path: Path) -> None:
    path = write(tmp_path, "docs.jsonl", DOCS)
    outcomes = []
    for batch in (1, 2, 500):
        idx = EvidenceIndex(sqlite3.connect(":memory:"))
        report = ingest_documents(idx, path, source="wiki", batch=batch)
        outcomes.append((report, idx.search("ice climate ocean", lim=10)))
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_unreadable_file_is_reported_not_raised(tmp_path: Path, index: EvidenceIndex) -> None:
    report = ingest_documents(index, tmp_path / "missing.jsonl", source="wiki")
    assert report.added == 0 and report.lines == 0
    assert [(e.line, e.code) for e in report.errors] == [(0, "UNREADABLE")]
    [(line, err)] = list(read_facts(tmp_path / "missing.jsonl"))
    assert line == 0 and isinstance(err, IngestError) and err.code == "UNREADABLE"


def test_invalid_utf8_is_a_bad_line(tmp_path: Path, index: EvidenceIndex) -> None:
    path = write(tmp_path, "docs.jsonl",
                 b'{"id": "a", "title": "\xff\xfe", "text": "x"}\n'
                 b'{"id": "b", "title": "B", "text": "fine"}')  # no final newline either
    report = ingest_documents(index, path, source="wiki")
    assert report.added == 1
    assert [(e.line, e.code) for e in report.errors] == [(1, "BAD_JSON")]


def test_a_database_failure_is_reported(tmp_path: Path) -> None:
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    idx.close()
    report = ingest_documents(idx, write(tmp_path, "docs.jsonl", DOCS), source="wiki")
    assert report.added == 0
    assert report.errors[-1].code == "INDEX_ERROR" and report.errors[-1].line == 0


FACTS = b"""\
{"id": "f1", "subject": "Apollo 11", "relation": "landing date", "object": "1969-07-20"}
{"id": "f2", "subject": "Moon", "relation": "visited by", "object": "Apollo 11",\
 "source": "wikidata"}
{"id": "f3", "subject": "Mars", "relation": "moons"}
{"id": "f4", "subject": "Mars", "relation": "moons", "object": "two", "source": 3}
"""


def test_facts(tmp_path: Path, index: EvidenceIndex) -> None:
    path = write(tmp_path, "facts.jsonl", FACTS)
    rows = dict(read_facts(path))
    assert rows[1] == Fact(id="f1", subject="Apollo 11", relation="landing date",
                           object="1969-07-20", source="kb")
    assert rows[2] == Fact(id="f2", subject="Moon", relation="visited by", object="Apollo 11",
                           source="wikidata")
    assert isinstance(rows[3], IngestError) and rows[3].field == "object"
    assert isinstance(rows[4], IngestError) and rows[4].field == "source"
    report = ingest_facts(index, path)
    assert (report.added, report.lines, [e.line for e in report.errors]) == (2, 4, [3, 4])
    assert [f.id for f in index.kb_lookup("Apollo 11 landing")] == ["f1", "f2"]


CORPUS = b"""\
{"id": "1257 Samalas eruption:94", "article": "1257 Samalas eruption",\
 "text": "The deposits showed a volcanic event."}
{"id": "Glacier:3", "article": "Glacier", "text": "Glaciers flow under their own weight."}
{"id": "Glacier:4", "title": "Glacier", "text": "Wrong format."}
"""


def test_corpus_adapter(tmp_path: Path, index: EvidenceIndex) -> None:
    path = write(tmp_path, "corpus.jsonl", CORPUS)
    assert list(read_corpus_sentences(path)) == [
        Document(doc_id="1257 Samalas eruption:94", title="1257 Samalas eruption",
                 text="The deposits showed a volcanic event."),
        Document(doc_id="Glacier:3", title="Glacier",
                 text="Glaciers flow under their own weight."),
    ]
    bad = [r for _, r in read_corpus(path) if isinstance(r, IngestError)]
    assert [(e.line, e.field) for e in bad] == [(3, "article")]
    report = ingest_corpus(index, path)
    assert (report.added, report.lines, len(report.errors)) == (2, 3, 1)
    # The article title is searchable: "samalas" appears only in the title.
    assert [h.doc_id for h in index.search("Samalas")] == ["1257 Samalas eruption:94"]
    assert index.sources() == {"wiki": 2}
