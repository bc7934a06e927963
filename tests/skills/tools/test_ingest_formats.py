"""Ingest for real corpora: ``title`` or ``article`` (the Climate-FEVER corpus as it is),
other field names, a folder of .txt/.md files, re-ingest that changes nothing, and
sentence embeddings computed once at ingest and stored in the database."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import Engine
from claimfsm.skills.embed import HashingEmbedder
from claimfsm.skills.tools.folder import ingest_folder, read_folder
from claimfsm.skills.tools.index import Document, EvidenceIndex
from claimfsm.skills.tools.ingest import FieldMap, IngestError, ingest_documents
from tests.support.components import need_semantic, without_semantic

CORPUS = Path(__file__).resolve().parents[2] / "data" / "eval_corpus.jsonl"


def cli(*args: str) -> tuple[int, Any, str]:
    res = CliRunner().invoke(main, list(args))
    try:
        return res.exit_code, orjson.loads(res.stdout), res.stderr
    except orjson.JSONDecodeError:
        return res.exit_code, res.stdout, res.stderr


class Counting:
    """A hashing embedder that counts the texts it encodes."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.name = self.inner.name
        self.dim = self.inner.dim
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        return self.inner.encode(texts)


def test_the_climate_fever_corpus_ingests_as_it_is(tmp_path: Path) -> None:
    db = str(tmp_path / "cf.db")
    code, out, _ = cli("ingest", str(CORPUS), "--db", db, "--json", "--no-embed")
    lines = len(CORPUS.read_text().splitlines())
    assert code == 0 and out["errors"] == [] and out["added"] == lines == out["lines"]
    with EvidenceIndex.open(db) as index:
        first = orjson.loads(CORPUS.read_text().splitlines()[0])
        doc = index.get_document(first["id"])
        assert doc is not None and doc.title == first["article"] and doc.text == first["text"]


def test_other_field_names_and_bad_lines_by_number(tmp_path: Path) -> None:
    f = tmp_path / "docs.jsonl"
    f.write_text('{"key": "a", "headline": "Ice", "body": "Sea ice thins."}\n'
                 '{"key": "b", "headline": "Heat"}\n'
                 '{"key": "c", "headline": "Sea", "body": "Seas rise."}\n')
    code, out, _ = cli("ingest", str(f), "--db", str(tmp_path / "x.db"), "--json", "--no-embed",
                       "--id-field", "key", "--title-field", "headline", "--text-field", "body")
    assert code == 0 and out["added"] == 2
    assert out["errors"] == [{"line": 2, "code": "MISSING_FIELD", "msg": "missing field 'body'"}]
    code, out, _ = cli("ingest", str(f), "--db", str(tmp_path / "y.db"), "--json", "--no-embed")
    assert out["added"] == 0 and [e["line"] for e in out["errors"]] == [1, 2, 3]
    assert out["errors"][0]["msg"] == "missing field 'id'"
    g = tmp_path / "untitled.jsonl"
    g.write_text('{"id": "q", "text": "No title."}\n')
    code, out, _ = cli("ingest", str(g), "--db", str(tmp_path / "z.db"), "--json", "--no-embed")
    assert "'title' (or 'article'" in out["errors"][0]["msg"]


def test_title_wins_over_article_when_both_are_there(tmp_path: Path) -> None:
    f = tmp_path / "d.jsonl"
    f.write_text('{"id": "a", "title": "T", "article": "A", "text": "x y z"}\n')
    index = EvidenceIndex(sqlite3.connect(":memory:"))
    assert ingest_documents(index, f).added == 1
    doc = index.get_document("a")
    assert doc is not None and doc.title == "T"
    assert ingest_documents(index, f, fields=FieldMap(title="article")).added == 1
    doc = index.get_document("a")
    assert doc is not None and doc.title == "A"


def test_a_folder_is_one_document_per_file(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "sea_level-rise.txt").write_text("Sea level rose 20 cm since 1900.\n")
    (root / "sub" / "ice.md").write_text("\n# Arctic sea ice\n\nIt declines by 13% a decade.\n")
    (root / "plain.md").write_text("No heading here.\n")
    (root / "blank.txt").write_text("   \n")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "data.json").write_text("{}")
    items = dict(read_folder(root))
    assert sorted(items) == ["blank.txt", "latin1.txt", "plain.md", "sea_level-rise.txt",
                             "sub/ice.md"]
    assert items["sub/ice.md"] == Document(doc_id="sub/ice.md", title="Arctic sea ice",
                                           text="# Arctic sea ice\n\nIt declines by 13% a decade.")
    assert isinstance(items["sea_level-rise.txt"], Document)
    assert items["sea_level-rise.txt"].title == "sea level rise"
    assert isinstance(items["plain.md"], Document) and items["plain.md"].title == "plain"
    bad = {k: v for k, v in items.items() if isinstance(v, IngestError)}
    assert {k: v.code for k, v in bad.items()} == {"blank.txt": "EMPTY_FIELD",
                                                    "latin1.txt": "NOT_UTF8"}
    assert all(k in v.msg for k, v in bad.items())
    db = str(tmp_path / "f.db")
    code, out, err = cli("ingest", str(root), "--db", db, "--no-embed")
    assert code == 0 and "added 3 of 5 files; 0 unchanged; 2 skipped" in out
    assert "latin1.txt: not UTF-8" in err
    code, verdict, _ = cli("verify", "Arctic sea ice declines by 13% a decade.", "--db", db,
                           "--json")
    cited = [e["id"] for s in verdict["subclaims"] for e in s["evidence"]]
    assert any(c.startswith("sub/ice.md") for c in cited)


def test_reingesting_the_same_documents_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    emb = Counting()
    with EvidenceIndex.open(db) as index:
        index.use_embedder(emb)
        first = ingest_documents(index, CORPUS)
        n = first.added
        assert n > 0 and first.unchanged == 0 and len(emb.texts) == n
        changes = index.conn.total_changes
        again = ingest_documents(index, CORPUS)
        assert (again.added, again.unchanged) == (0, n)
        assert index.conn.total_changes == changes  # not one row written
        assert len(emb.texts) == n  # no vector recomputed
        # One changed document: only it is rewritten and re-embedded.
        lines = CORPUS.read_text().splitlines()
        row = orjson.loads(lines[0])
        row["text"] += " Revised."
        edited = tmp_path / "edited.jsonl"
        edited.write_text("\n".join([orjson.dumps(row).decode(), *lines[1:]]) + "\n")
        third = ingest_documents(index, edited)
        assert (third.added, third.unchanged) == (1, n - 1)
        assert emb.texts[-1].endswith("Revised.") and len(emb.texts) == n + 1
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.txt").write_text("Alpha text.")
    with EvidenceIndex.open(tmp_path / "g.db") as index:
        assert ingest_folder(index, folder).added == 1
        assert (ingest_folder(index, folder).added, ingest_folder(index, folder).unchanged) \
            == (0, 1)


def test_embeddings_at_ingest_are_stored_and_used_by_every_session(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    emb = Counting()
    with EvidenceIndex.open(db) as index:
        ingest_documents(index, CORPUS)
        index.use_embedder(emb)
        seen: list[tuple[int, int]] = []
        done = index.embed_missing(batch=5, on_batch=lambda d, t: seen.append((d, t)))
        n = index.count_documents()
        assert done == n and seen[-1] == (n, n) and len(seen) == -(-n // 5)
        sentences = index.embed_sentences()
        assert sentences == index.sentences.count(emb.name) > 0
        assert index.embed_sentences() == 0  # once
    before = len(emb.texts)
    config = EngineConfig(profile=Profile(retrieval="hybrid"), embedder=emb)
    with Engine.open(db, config=config) as engine:
        assert engine.index.dense.count() == n
        assert len(emb.texts) == before  # the vectors came from the database
        head = engine.driver.run(engine.start("Arctic sea ice is declining.").sid)
        assert head.fsm == "DONE"
    # Only queries were encoded by the session, never a corpus document or sentence again.
    rows = list(map(orjson.loads, CORPUS.read_bytes().splitlines()))
    docs = {f"{d['article']}: {d['text']}" for d in rows} | {d["text"] for d in rows}
    assert not docs & set(emb.texts[before:])


def test_embed_without_the_extra_is_a_clear_error(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    without_semantic(monkeypatch)
    code, out, _ = cli("ingest", str(CORPUS), "--db", str(tmp_path / "x.db"), "--json",
                       "--embed")
    assert code == 2 and out["error"]["code"] == "SEMANTIC_UNAVAILABLE"
    with EvidenceIndex.open(tmp_path / "x.db") as index:  # the documents are kept
        assert index.count_documents() > 0


def test_embed_with_the_extra_stores_minilm_vectors(tmp_path: Path) -> None:
    need_semantic()
    db = str(tmp_path / "m.db")
    code, out, _ = cli("ingest", str(CORPUS), "--db", db, "--json")
    assert code == 0 and out["embedded"] == out["added"] > 0
    code, out, _ = cli("ingest", str(CORPUS), "--db", db, "--json")
    assert out["embedded"] == 0 and out["unchanged"] == out["lines"]
