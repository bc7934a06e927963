"""EvidenceIndex (SQLite FTS5/BM25) and the sentence splitter/ranker."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claimfsm import ClaimFsmError
from claimfsm.skills.tools.index import Document, EvidenceIndex, Fact, Hit, fts_query, query_terms
from claimfsm.skills.tools.sentences import rank_sentences, split_sentences

FILLER = [
    "Forests store carbon in trees and soil.",
    "Deserts receive little rain each year.",
    "Volcanoes release ash and gases.",
    "Rivers carry sediment to the sea.",
    "Wind turbines convert moving air to electricity.",
    "Coral reefs host many fish species.",
    "Solar panels turn sunlight into power.",
    "Farmers rotate crops to keep soil fertile.",
]


def docs(*pairs: tuple[str, str], title: str = "Doc") -> list[Document]:
    return [Document(doc_id=i, title=title, text=t) for i, t in pairs]


@pytest.fixture
def index() -> EvidenceIndex:
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    idx.add_documents(
        [Document(doc_id=f"filler:{i}", title="Filler", text=t) for i, t in enumerate(FILLER)],
        source="wiki",
    )
    idx.add_documents(
        docs(
            ("both", "The glacier melted into the ocean last year."),
            ("glacier-only", "The glacier retreated up the valley last year."),
            ("ocean-a", "The ocean warmed near the coast last year."),
            ("ocean-b", "The ocean rose along the shore last year."),
            ("ocean-c", "The ocean currents shifted south last year."),
        ),
        source="wiki",
    )
    return idx


def ids(hits: Sequence[Hit]) -> list[str]:
    return [h.doc_id for h in hits]


# --- storage ---------------------------------------------------------------------------


def test_round_trip_and_counts(index: EvidenceIndex) -> None:
    doc = index.get_document("both")
    assert doc == Document(doc_id="both", title="Doc", text=FILLER_BOTH, source="wiki")
    assert index.get_document("missing") is None
    assert index.count_documents() == len(FILLER) + 5
    assert index.sources() == {"wiki": len(FILLER) + 5}


FILLER_BOTH = "The glacier melted into the ocean last year."


def test_upsert_replaces_text_and_reindexes(index: EvidenceIndex) -> None:
    n = index.count_documents()
    index.add_documents(docs(("both", "Penguins waddle on pack ice.")), source="news")
    assert index.count_documents() == n
    assert index.get_document("both") == Document(
        doc_id="both", title="Doc", text="Penguins waddle on pack ice.", source="news"
    )
    assert ids(index.search("penguins")) == ["both"]
    assert "both" not in ids(index.search("melted", lim=50))
    # Re-adding the identical document is harmless (and stays searchable).
    index.add_documents(docs(("both", "Penguins waddle on pack ice.")), source="news")
    assert ids(index.search("penguins")) == ["both"]


def test_source_comes_from_argument_or_document() -> None:
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    idx.add_documents([Document(doc_id="n1", title="T", text="x", source="news")])
    idx.add_documents([Document(doc_id="w1", title="T", text="x", source="news")], source="web")
    assert idx.sources() == {"news": 1, "web": 1}
    with pytest.raises(ValueError, match="source"):
        idx.add_documents(docs(("k", "x")), source="kb")  # type: ignore[arg-type]


def test_open_uses_wal_and_persists(tmp_path: Path) -> None:
    path = tmp_path / "ev.db"
    with EvidenceIndex.open(path) as idx:
        assert idx.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        idx.add_documents(docs(("a", "Arctic sea ice declines.")), source="wiki")
        idx.add_facts([Fact(id="f", subject="Arctic", relation="has", object="sea ice")])
    with EvidenceIndex.open(path) as idx:
        assert ids(idx.search("arctic")) == ["a"]
        assert idx.count_facts() == 1
        names = [r[0] for r in idx.conn.execute("SELECT name FROM sqlite_master")]
    assert names and all(n.startswith(("ev_", "sqlite_autoindex_ev_")) for n in names)


def test_shares_a_connection_and_respects_the_callers_transaction() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE other (x INTEGER)")
    idx = EvidenceIndex(conn)
    conn.execute("INSERT INTO other VALUES (1)")  # opens the caller's transaction
    idx.add_documents(docs(("a", "Arctic sea ice declines.")), source="wiki")
    assert conn.in_transaction  # the index did not commit on the caller's behalf
    conn.rollback()
    assert idx.count_documents() == 0
    assert conn.execute("SELECT count(*) FROM other").fetchone()[0] == 0


# --- ranking ---------------------------------------------------------------------------


def test_more_matching_terms_rank_first(index: EvidenceIndex) -> None:
    hits = index.search("glacier ocean", lim=10)
    assert hits[0].doc_id == "both"
    assert set(ids(hits)) == {"both", "glacier-only", "ocean-a", "ocean-b", "ocean-c"}


def test_rarer_term_outranks_common_term(index: EvidenceIndex) -> None:
    hits = index.search("glacier ocean", lim=10)
    order = ids(hits)
    # "glacier" is in 2 documents, "ocean" in 4: a glacier-only match beats ocean-only ones.
    assert order.index("glacier-only") < min(order.index(o) for o in ("ocean-a", "ocean-b"))


def test_scores_are_negated_bm25_rounded_and_descending(index: EvidenceIndex) -> None:
    hits = index.search("glacier ocean shore", lim=10)
    scores = [h.score for h in hits]
    assert all(s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert all(round(s, 6) == s for s in scores)
    raw = index.conn.execute(
        "SELECT -bm25(ev_docs_fts, 2.0, 1.0) FROM ev_docs_fts JOIN ev_docs d "
        "ON d.rowid = ev_docs_fts.rowid WHERE ev_docs_fts MATCH ? AND d.doc_id = 'both'",
        (fts_query("glacier ocean shore"),),
    ).fetchone()[0]
    assert next(h for h in hits if h.doc_id == "both").score == round(raw, 6)


def test_title_is_weighted_above_text() -> None:
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    idx.add_documents(
        [Document(doc_id=f"f{i}", title="Filler", text=t) for i, t in enumerate(FILLER)]
        + [
            # Equal lengths: without the title weight these two would tie and "a-text"
            # would win the doc_id tie-break.
            Document(doc_id="a-text", title="Valley", text="Glacier ice moves slowly down."),
            Document(doc_id="b-title", title="Glacier", text="Valley ice moves slowly down."),
        ],
        source="wiki",
    )
    assert ids(idx.search("glacier")) == ["b-title", "a-text"]


def test_ties_are_broken_by_doc_id_whatever_the_insertion_order() -> None:
    texts = [("c", "Identical melting glacier."), ("a", "Identical melting glacier."),
             ("b", "Identical melting glacier.")]
    one = EvidenceIndex(sqlite3.connect(":memory:"))
    one.add_documents(docs(*texts), source="wiki")
    two = EvidenceIndex(sqlite3.connect(":memory:"))
    two.add_documents(docs(*reversed(texts)), source="wiki")
    hits = one.search("glacier")
    assert ids(hits) == ["a", "b", "c"]
    assert len({h.score for h in hits}) == 1
    assert hits == two.search("glacier") == one.search("glacier")
    assert ids(one.search("glacier", lim=2)) == ["a", "b"]


def test_source_filter(index: EvidenceIndex) -> None:
    index.add_documents(docs(("news-1", "Glacier collapse reported today.")), source="news")
    index.add_documents(docs(("web-1", "Glacier tours open for summer.")), source="web")
    assert ids(index.search("glacier", src="news")) == ["news-1"]
    assert ids(index.search("glacier", src="web")) == ["web-1"]
    assert {h.source for h in index.search("glacier", lim=10, src="wiki")} == {"wiki"}
    assert {h.source for h in index.search("glacier", lim=10)} == {"wiki", "news", "web"}


def test_limit_and_snippet(index: EvidenceIndex) -> None:
    assert len(index.search("ocean", lim=2)) == 2
    assert index.search("ocean", lim=0) == []
    long_text = "Glacier " + "word " * 100
    index.add_documents(docs(("long", long_text)), source="wiki")
    hit = next(h for h in index.search("glacier", lim=10) if h.doc_id == "long")
    assert hit.snippet.endswith("…") and len(hit.snippet) <= 201
    assert long_text.startswith(hit.snippet[:-1])
    short = next(h for h in index.search("glacier", lim=10) if h.doc_id == "both")
    assert short.snippet == FILLER_BOTH


def test_stemming_and_diacritics() -> None:
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    idx.add_documents(docs(("a", "The glaciers were melting."), ("b", "A café in Zürich.")),
                      source="wiki")
    assert ids(idx.search("glacier melted")) == ["a"]
    assert ids(idx.search("cafe zurich")) == ["b"]
    assert ids(idx.search("Café")) == ["b"]


# --- query safety ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hazard", "plain"),
    [
        ('glacier "ocean', "glacier ocean"),  # unbalanced quote
        ('"glacier ocean"', "glacier ocean"),  # a phrase, not a phrase query
        ("NEAR(glacier ocean)", "near glacier ocean"),
        ("NEAR(glacier ocean, 2)", "near glacier ocean 2"),
        ("glac*", "glac"),  # no prefix expansion
        ("title:ocean", "title ocean"),  # not a column filter
        ("{title}: ocean", "title ocean"),
        ("glacier -ocean", "glacier ocean"),  # not an exclusion
        ("(glacier", "glacier"),  # unbalanced parenthesis
        ("glacier)", "glacier"),
        ("^ocean", "ocean"),  # not an initial-token query
        ("glacier AND ocean", "glacier ocean"),  # not an intersection
        ("glacier NOT ocean", "glacier ocean"),  # not an exclusion
        ("glacier OR", "glacier"),  # dangling operator
        ("AND", "and"),
        ("ocean + glacier", "ocean glacier"),
    ],
)
def test_fts_syntax_in_claims_is_inert(index: EvidenceIndex, hazard: str, plain: str) -> None:
    assert index.search(hazard, lim=20) == index.search(plain, lim=20)
    assert index.kb_lookup(hazard) == index.kb_lookup(plain)


def test_hazards_keep_their_plain_meaning(index: EvidenceIndex) -> None:
    # Raw FTS5 would exclude ocean documents, expand the prefix, or filter by column.
    assert "ocean-a" in ids(index.search("glacier NOT ocean", lim=20))
    assert "ocean-a" in ids(index.search("glacier -ocean", lim=20))
    assert index.search("glac*") == []
    assert "ocean-a" in ids(index.search("title:ocean", lim=20))
    with pytest.raises(sqlite3.OperationalError):  # the hazard is real
        index.conn.execute("SELECT * FROM ev_docs_fts WHERE ev_docs_fts MATCH ?", ("(glacier",))


@pytest.mark.parametrize("empty", ["", "   ", "!!!", "\"'*:-^()", "\n\t"])
def test_empty_query_returns_nothing(index: EvidenceIndex, empty: str) -> None:
    assert fts_query(empty) == ""
    assert index.search(empty) == []
    assert index.kb_lookup(empty) == []


def test_stopwords_dropped_unless_nothing_remains() -> None:
    assert query_terms("The glacier of the Alps") == ["glacier", "alps"]
    assert query_terms("the of") == ["the", "of"]
    assert fts_query("it's") == '"it\'s"'


_FTS = re.compile(r'^"[^"]+"( OR "[^"]+")*$')


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_a_safe_query(text: str) -> None:
    q = fts_query(text)
    assert q == "" or _FTS.match(q)
    idx = _SHARED
    idx.search(text)
    idx.kb_lookup(text)


_SHARED = EvidenceIndex(sqlite3.connect(":memory:", check_same_thread=False))
_SHARED.add_documents(docs(("a", "Some text about glaciers and NEAR oceans.")), source="wiki")


# --- knowledge base --------------------------------------------------------------------


def test_kb_lookup() -> None:
    idx = EvidenceIndex(sqlite3.connect(":memory:"))
    facts = [
        Fact(id="f1", subject="Apollo 11", relation="landing date", object="1969-07-20"),
        Fact(id="f2", subject="Apollo 13", relation="outcome", object="aborted"),
        Fact(id="f3", subject="Moon", relation="first visited by", object="Apollo 11",
             source="wikidata"),
        Fact(id="f4", subject="Mars", relation="moons", object="Phobos and Deimos"),
    ]
    assert idx.add_facts(facts) == 4
    assert idx.count_facts() == 4
    found = idx.kb_lookup("Apollo 11 landing", lim=5)
    assert found[0] == facts[0]
    assert {f.id for f in found} == {"f1", "f2", "f3"}
    # The subject is weighted above the object.
    assert idx.kb_lookup("Moon", lim=2)[0].id == "f3"
    assert idx.kb_lookup("Apollo", lim=1) == [idx.kb_lookup("Apollo", lim=3)[0]]
    idx.add_facts([Fact(id="f2", subject="Apollo 13", relation="outcome", object="returned")])
    assert idx.count_facts() == 4
    assert [f.id for f in idx.kb_lookup("returned")] == ["f2"]
    assert idx.kb_lookup("aborted") == []
    assert idx.count_documents() == 0


# --- sentences -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith moved to the U.S. in 1990. He earned $1.5 million.",
         ["Dr. Smith moved to the U.S. in 1990.", "He earned $1.5 million."]),
        ("He lived in the U.S. The move was hard.",
         ["He lived in the U.S.", "The move was hard."]),
        ("John F. Kennedy spoke. J. R. R. Tolkien wrote.",
         ["John F. Kennedy spoke.", "J. R. R. Tolkien wrote."]),
        ("Warming was 0.8 °C. Since 1880 it rose.", ["Warming was 0.8 °C.", "Since 1880 it rose."]),
        ("See Fig. 3 for details. No. 5 is listed.",
         ["See Fig. 3 for details.", "No. 5 is listed."]),
        ("It shows e.g. Paris and Mt. Everest too.", ["It shows e.g. Paris and Mt. Everest too."]),
        ("Really? Yes! Wait… Okay.", ["Really?", "Yes!", "Wait…", "Okay."]),
        ('He said "Stop." Then left.', ['He said "Stop."', "Then left."]),
        ("lower case. after a period stays", ["lower case. after a period stays"]),
        ("First para\nwraps here\n\nSecond para", ["First para wraps here", "Second para"]),
        ("No final stop", ["No final stop"]),
        ("", []),
        ("   \n ", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_rank_sentences_scores_overlap_numbers_and_ties() -> None:
    sentences = [
        "The sky is blue.",
        "Global temperature rose in 1880.",
        "Temperatures rise.",
        "Temperatures rise.",
        "Rainfall rose in 1950.",
    ]
    ranked = rank_sentences(sentences, "temperature rise since 1880", lim=10)
    assert [r.idx for r in ranked] == [1, 2, 3, 0, 4]
    assert ranked[1].score == ranked[2].score > 0  # identical sentences tie, by position
    assert ranked[-1].score == ranked[-2].score == 0.0
    assert [r.text for r in ranked] == [sentences[r.idx] for r in ranked]
    assert rank_sentences(sentences, "temperature rise since 1880", lim=2) == ranked[:2]
    # The number counts extra: "1880" alone beats "temperatures rise" alone.
    only = rank_sentences(["It was 1880 then.", "Temperatures rise fast."], "temperature 1880")
    assert only[0].idx == 0


def test_rank_sentences_edge_cases() -> None:
    assert rank_sentences([], "anything") == []
    assert rank_sentences(["a", "b"], "x", lim=0) == []
    assert [r.idx for r in rank_sentences(["b b", "a"], "the of", lim=5)] == [0, 1]
    assert rank_sentences(["Cost 10,000 dollars."], "10000")[0].score > 0


def test_an_index_file_that_is_not_a_database_is_a_store_code(tmp_path: Path) -> None:
    path = tmp_path / "index.db"
    path.write_text("hello, not a database\n")
    with pytest.raises(ClaimFsmError) as info:
        EvidenceIndex.open(path)
    assert (info.value.code, info.value.field) == ("STORE_NOT_DATABASE", "db")
    assert str(info.value).startswith(f"--db: {path}: damaged or not a SQLite database")
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)
