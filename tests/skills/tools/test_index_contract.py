"""The retrieval contract, on every evidence index: SQLite FTS5 and PostgreSQL (on the
throwaway cluster of tests/support/pg.py). The same tests, the same expectations:
matching any term, best first with ties by id, the title counting more, rarer terms
counting more, stemming and folded diacritics, query text that is never query syntax,
the source filter, upserts that skip unchanged documents, ranking of given candidates,
facts, persistence across openings, and stored vectors fused into the ranking."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from claimfsm.skills.embed import HashingEmbedder
from claimfsm.skills.tools.index import Document, EvidenceIndex, Fact
from claimfsm.skills.tools.index_pg import PgEvidenceIndex, open_index

Opener = Callable[[], EvidenceIndex]

FILLER = ["Forests store carbon in trees and soil.", "Deserts receive little rain each year.",
          "Volcanoes release ash and gases.", "Rivers carry sediment to the sea.",
          "Wind turbines convert moving air to electricity.",
          "Coral reefs host many fish species.", "Solar panels turn sunlight into power.",
          "Farmers rotate crops to keep soil fertile."]


@pytest.fixture(params=["sqlite", "postgresql"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    where = (str(tmp_path / "index.db") if request.param == "sqlite"
             else request.getfixturevalue("pg_url"))
    opened: list[EvidenceIndex] = []

    def make() -> EvidenceIndex:
        opened.append(open_index(where))
        return opened[-1]

    yield make
    for idx in opened:
        idx.close()


@pytest.fixture
def index(opener: Opener) -> EvidenceIndex:
    idx = opener()
    idx.add_documents([Document(doc_id=f"filler:{i}", title="Filler", text=t)
                       for i, t in enumerate(FILLER)], source="wiki")
    idx.add_documents([
        Document(doc_id="both", title="Doc", text="The glacier melted into the ocean."),
        Document(doc_id="glacier-only", title="Doc", text="The glacier retreated up the valley."),
        Document(doc_id="ocean-a", title="Doc", text="The ocean warmed near the coast."),
        Document(doc_id="ocean-b", title="Doc", text="The ocean rose along the shore."),
        Document(doc_id="cafe", title="Café culture", text="Paris has a café on every corner."),
        Document(doc_id="news-1", title="Storm", text="A storm hit the coast.", source="news"),
    ])
    return idx


def ids(idx: EvidenceIndex, q: str, **kw: object) -> list[str]:
    return [h.doc_id for h in idx.search(q, **kw)]  # type: ignore[arg-type]


def test_the_opened_kind(opener: Opener, request: pytest.FixtureRequest) -> None:
    idx = opener()
    kind = request.node.callspec.params["opener"]
    assert isinstance(idx, PgEvidenceIndex) == (kind == "postgresql")


def test_any_term_matches_best_first(index: EvidenceIndex) -> None:
    got = ids(index, "glacier ocean", lim=10)
    assert got[0] == "both"  # both terms
    assert set(got) == {"both", "glacier-only", "ocean-a", "ocean-b"}
    hits = index.search("glacier ocean", lim=10)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.score > 0 and h.source == "wiki" for h in hits)


def test_ties_break_by_doc_id_and_lim_cuts(index: EvidenceIndex) -> None:
    tied = [d for d in ids(index, "ocean", lim=10) if d.startswith("ocean-")]
    assert tied == sorted(tied)
    assert len(ids(index, "ocean", lim=2)) == 2 and ids(index, "ocean", lim=0) == []


def test_a_rarer_term_counts_more(index: EvidenceIndex) -> None:
    # "valley" is in one document, "ocean" in three: the valley document comes first.
    assert ids(index, "ocean valley", lim=3)[0] == "glacier-only"


def test_the_title_counts_more(opener: Opener) -> None:
    idx = opener()
    idx.add_documents([Document(doc_id="a", title="Aurora", text="Lights in the sky."),
                       Document(doc_id="b", title="Sky", text="An aurora lights the sky."),
                       *[Document(doc_id=f"f{i}", title="F", text=t)
                         for i, t in enumerate(FILLER)]])
    assert ids(idx, "aurora", lim=2) == ["a", "b"]


def test_stemming_and_folded_diacritics(index: EvidenceIndex) -> None:
    assert "ocean-a" in ids(index, "warming", lim=10)  # warmed ~ warming
    assert "cafe" in ids(index, "cafe", lim=5) and "cafe" in ids(index, "café", lim=5)


@pytest.mark.parametrize("q", ['"glacier', "glacier AND NOT ocean", "glacier) OR (x",
                               "NEAR(glacier ocean)", "glacier*", "glacier:* | !ocean",
                               "o'brien's glacier", "glacier \\ ocean", "%s ? glacier"])
def test_query_text_is_never_query_syntax(index: EvidenceIndex, q: str) -> None:
    got = ids(index, q, lim=10)
    assert "glacier-only" in got and "both" in got


def test_empty_and_stopword_queries(index: EvidenceIndex) -> None:
    assert ids(index, "", lim=5) == [] and ids(index, "  ?! ", lim=5) == []
    assert isinstance(ids(index, "the of and", lim=5), list)


def test_the_source_filter(index: EvidenceIndex) -> None:
    assert ids(index, "coast", lim=10, src="news") == ["news-1"]
    assert "news-1" not in ids(index, "coast", lim=10, src="wiki")
    assert index.sources() == {"news": 1, "wiki": 13}


def test_upserts_skip_unchanged_and_rewrite_changed(index: EvidenceIndex) -> None:
    same = index.get_document("ocean-a")
    assert same is not None
    assert index.upsert_documents([same]) == (0, 1)
    changed = same.model_copy(update={"text": "The ocean froze near the coast."})
    new = Document(doc_id="new", title="N", text="x y")
    assert index.upsert_documents([changed, new]) == (2, 0)
    assert "ocean-a" in ids(index, "froze", lim=5)
    assert "ocean-a" not in ids(index, "warmed", lim=5)
    assert index.count_documents() == 15


def test_rank_documents_orders_the_given_candidates(index: EvidenceIndex) -> None:
    ranked = index.rank_documents("glacier ocean", ["ocean-b", "unknown", "both", "filler:0"])
    assert [d for d, _ in ranked] == ["both", "ocean-b", "filler:0"]
    assert ranked[-1][1] == 0.0 and ranked[0][1] > ranked[1][1] > 0


def test_facts(index: EvidenceIndex) -> None:
    index.add_facts([Fact(id="f1", subject="Apollo 11", relation="landed", object="1969"),
                     Fact(id="f2", subject="Apollo 13", relation="launched", object="1970"),
                     Fact(id="f3", subject="Artemis", relation="goal", object="Moon")])
    assert index.kb_lookup("Apollo 11 landing", lim=2)[0].id == "f1"
    assert index.kb_lookup("", lim=2) == [] and index.count_facts() == 3


def test_get_document_and_persistence(opener: Opener) -> None:
    first = opener()
    first.add_documents([Document(doc_id="p1", title="Kept", text="Kept across openings.")])
    first.close()
    again = opener()
    doc = again.get_document("p1")
    assert doc is not None and doc.text == "Kept across openings." and doc.source == "wiki"
    assert again.get_document("nope") is None and ids(again, "openings") == ["p1"]


def test_stored_vectors_are_fused_into_the_ranking(opener: Opener) -> None:
    idx = opener()
    idx.use_embedder(HashingEmbedder())
    idx.add_documents([Document(doc_id="m", title="Moon", text="NASA landed on the Moon."),
                       *[Document(doc_id=f"f{i}", title="F", text=t)
                         for i, t in enumerate(FILLER)]])
    assert idx.dense.count() == len(FILLER) + 1  # stored at ingest, as the SQLite index does
    assert idx.embed_sentences() > 0 and idx.sentences.count(HashingEmbedder().name) > 0
    lexical = idx.search("moon landing", lim=3, dense=False)
    hybrid = idx.search("moon landing", lim=3)
    assert lexical[0].doc_id == hybrid[0].doc_id == "m"
    assert hybrid[0].score != lexical[0].score  # fused, not BM25 alone
    ranked = idx.rank_documents("moon landing", ["f1", "m"])
    assert ranked[0][0] == "m"


def test_a_dropped_server_connection_is_opened_again(pg_url: str) -> None:
    import psycopg

    idx = open_index(pg_url)
    try:
        idx.add_documents([Document(doc_id="k", title="Kept", text="Still here after it.")])
        pid = idx.conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        with psycopg.connect(pg_url, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert ids(idx, "still here") == ["k"]  # one failed query reconnected, not an error
        assert idx.conn.execute("SELECT pg_backend_pid()").fetchone()[0] != pid
    finally:
        idx.close()
