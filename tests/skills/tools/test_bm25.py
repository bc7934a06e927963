"""BM25 from the index's postings (skills/tools/bm25.py) against FTS5's own bm25()."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from claimfsm.skills.tools import bm25 as bm25_module
from claimfsm.skills.tools.bm25 import Bm25, decode_varints
from claimfsm.skills.tools.index import Document, EvidenceIndex, fts_query, query_terms
from claimfsm.skills.tools.index_schema import TOKENIZE

WORDS = ("warm warming warmed warmer ice sea seas level levels rise rising rose carbon "
         "dioxide emission emissions ocean oceans glacier glaciers melt melting melted "
         "temperature temperatures record arctic antarctic solar sun cycle cycles co2 "
         "volcano volcanoes ash cloud clouds forest forests drought flood floods 1979 "
         "2016 percent decade century human humans cause caused causes").split()


def corpus(n: int, seed: int = 7) -> list[Document]:
    """Documents of varied length and sources; every fifth repeats an earlier one's text
    and title under another id (scores tie exactly, so the doc_id decides)."""
    rnd = random.Random(seed)
    out: list[Document] = []
    for i in range(n):
        if i % 5 == 4:
            twin = out[rnd.randrange(len(out))]
            out.append(Document(doc_id=f"d{i:04d}", title=twin.title, text=twin.text,
                                source=("wiki", "web", "news")[i % 3]))
            continue
        text = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 40))) + "."
        title = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 3)))
        out.append(Document(doc_id=f"d{i:04d}", title=title, text=text,
                            source=("wiki", "web", "news")[i % 3]))
    return out


def queries(n: int, seed: int = 11) -> list[str]:
    rnd = random.Random(seed)
    return [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 12))) for _ in range(n)]


class _Fts5Only:
    """A scorer that always leaves the ranking to FTS5 (the SQL path)."""

    def top(self, *_: Any) -> None:
        return None

    def of_documents(self, *_: Any) -> None:
        return None


def fts5_only(index: EvidenceIndex) -> EvidenceIndex:
    twin = EvidenceIndex(index.conn)
    twin._scores = _Fts5Only()  # type: ignore[assignment]
    return twin


@pytest.fixture(scope="module")
def index() -> EvidenceIndex:
    idx = EvidenceIndex(sqlite3.connect(":memory:", check_same_thread=False))
    idx.add_documents(corpus(400))
    return idx


def fts5_scores(conn: sqlite3.Connection, q: str) -> dict[int, float]:
    return {int(r[0]): -float(r[1]) for r in conn.execute(
        "SELECT rowid, bm25(ev_docs_fts, 2.0, 1.0) FROM ev_docs_fts WHERE ev_docs_fts MATCH ?",
        (fts_query(q),))}


def test_every_score_is_fts5s_double(index: EvidenceIndex) -> None:
    scorer = Bm25(TOKENIZE, (2.0, 1.0), ("title", "text"))
    rows = 0
    for q in queries(150):
        mine = scorer.scores(index.conn, query_terms(q))
        assert mine == fts5_scores(index.conn, q), q  # exact floats, same rows
        rows += len(mine or {})
    assert rows > 5_000


@pytest.mark.parametrize("src", [None, "wiki", "web", "news"])
def test_search_ranks_as_fts5_does(index: EvidenceIndex, src: str | None) -> None:
    sql = fts5_only(index)
    for n, q in enumerate(queries(120, seed=n_seed(src))):
        lim = (1, 3, 5, 20, 50)[n % 5]
        assert index.search(q, lim=lim, src=src) == sql.search(q, lim=lim, src=src), q


def n_seed(src: str | None) -> int:
    return {None: 1, "wiki": 2, "web": 3, "news": 4}[src]


def test_ties_at_the_cut_go_by_doc_id() -> None:
    # 60 documents with the same text score the same: any lim cuts through the tie.
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    idx.add_documents([Document(doc_id=f"t{i:03d}", title="", text="sea level rise")
                       for i in reversed(range(60))])
    idx.add_documents([Document(doc_id="best", title="sea", text="sea level rise sea")])
    hits = idx.search("sea level", lim=25)
    assert hits == fts5_only(idx).search("sea level", lim=25)
    assert [h.doc_id for h in hits] == ["best", *[f"t{i:03d}" for i in range(24)]]


def test_rank_documents_as_fts5_does(index: EvidenceIndex) -> None:
    sql = fts5_only(index)
    rnd = random.Random(3)
    ids = [f"d{i:04d}" for i in range(400)]
    for q in queries(60, seed=5):
        pick = [*rnd.sample(ids, 30), "unknown", "d0001", "d0001"]
        assert index.rank_documents(q, pick) == sql.rank_documents(q, pick), q


def test_terms_of_several_tokens_are_left_to_fts5(index: EvidenceIndex) -> None:
    scorer = Bm25(TOKENIZE, (2.0, 1.0), ("title", "text"))
    assert scorer.scores(index.conn, query_terms("sea rose 1.5 percent")) is None
    assert scorer.scores(index.conn, query_terms("sea rose")) is not None
    sql = fts5_only(index)
    for q in ("sea rose 1.5 percent", "don't melt", "ice, 2016.5"):
        assert index.search(q, lim=10) == sql.search(q, lim=10)


def test_a_change_of_the_corpus_drops_the_cache() -> None:
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    idx.add_documents(corpus(50))
    sql = fts5_only(idx)
    before = idx.search("glacier melt", lim=5)
    idx.add_documents([Document(doc_id="new", title="glacier melt", text="glacier melt glacier")])
    after = idx.search("glacier melt", lim=5)
    assert after[0].doc_id == "new" and after != before
    assert after == sql.search("glacier melt", lim=5)
    idx.upsert_documents([Document(doc_id="new", title="", text="a forest")])  # changed
    assert idx.search("glacier melt", lim=5) == sql.search("glacier melt", lim=5) == before
    assert idx.rank_documents("forest", ["new", "d0001"]) == sql.rank_documents(
        "forest", ["new", "d0001"])


def test_a_write_by_another_connection_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    writer = EvidenceIndex.open(path)
    writer.add_documents(corpus(40))
    reader = EvidenceIndex(sqlite3.connect(path))
    first = reader.search("ocean temperature", lim=3)
    writer.add_documents([Document(doc_id="zz", title="ocean", text="ocean temperature ocean")])
    hits = reader.search("ocean temperature", lim=3)
    assert hits[0].doc_id == "zz" and hits != first
    assert hits == fts5_only(reader).search("ocean temperature", lim=3)
    writer.close()
    reader.close()


def test_an_open_transaction_is_left_to_fts5(index: EvidenceIndex) -> None:
    conn = sqlite3.connect(":memory:")
    idx = EvidenceIndex(conn)
    idx.add_documents(corpus(30))
    scorer = Bm25(TOKENIZE, (2.0, 1.0), ("title", "text"))
    conn.execute("BEGIN")
    conn.execute("INSERT INTO ev_docs(doc_id, title, source, text) VALUES "
                 "('p', 'ice', 'wiki', 'ice ice')")
    assert scorer.scores(conn, ["ice"]) is None
    assert idx.search("ice", lim=1)[0].doc_id == "p"  # FTS5 sees its pending write
    conn.rollback()
    assert scorer.scores(conn, ["ice"]) == fts5_scores(conn, "ice")


def test_the_caches_are_bounded(index: EvidenceIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_module, "_MAX_TOKENS", 7)
    scorer = Bm25(TOKENIZE, (2.0, 1.0), ("title", "text"))
    for q in queries(40, seed=9):
        assert scorer.scores(index.conn, query_terms(q)) == fts5_scores(index.conn, q)
        assert len(scorer._tokens) <= 7
    corpus = scorer._corpus
    assert corpus is not None and corpus.terms
    # one score per posting at most: the cache is never larger than the index
    assert all(set(corpus.terms[t]) == set(corpus.postings[t]) for t in corpus.terms)
    assert sum(len(p) for p in corpus.postings.values()) <= bm25_module.MAX_TOKENS


def test_an_index_above_max_tokens_is_left_to_fts5(
    index: EvidenceIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25_module, "MAX_TOKENS", 1_000)
    scorer = Bm25(TOKENIZE, (2.0, 1.0), ("title", "text"))
    assert scorer.scores(index.conn, ["ice"]) is None
    monkeypatch.setattr(bm25_module, "MAX_TOKENS", 10_000_000)
    assert scorer.scores(index.conn, ["ice"]) == fts5_scores(index.conn, "ice")


def test_an_index_with_another_tokenizer_is_left_to_fts5() -> None:
    conn = sqlite3.connect(":memory:")
    EvidenceIndex(conn).add_documents(corpus(10))
    scorer = Bm25("unicode61", (2.0, 1.0), ("title", "text"))
    assert scorer.scores(conn, ["ice"]) is None


def test_decode_varints() -> None:
    assert decode_varints(b"") == []
    assert decode_varints(bytes([0x05, 0x7F])) == [5, 127]
    assert decode_varints(bytes([0x81, 0x00, 0x82, 0x01])) == [128, 257]
    assert decode_varints(bytes([0xFF] * 8 + [0x01])) == [(2**56 - 1) << 8 | 1]
