"""Hybrid retrieval: dense vectors in the evidence index, RRF with BM25, the rank tool,
and the claim-level request plus pool ranking in a real session."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.eval.embed import attach_vectors, cache_path
from claimfsm.skills.embed import HashingEmbedder
from claimfsm.skills.tools.index import Document, EvidenceIndex
from claimfsm.skills.tools.vectors import LEXICAL_WEIGHT, fuse_scores, rrf

DOCS = [
    Document(doc_id="a:0", title="Glacier", text="Glaciers worldwide are retreating and melting."),
    Document(doc_id="a:1", title="Glacier", text="A glacier is a persistent body of dense ice."),
    Document(doc_id="b:0", title="Sea level", text="Global mean sea level rose about 20 cm."),
    Document(doc_id="c:0", title="Jupiter", text="Jupiter has a faint ring system.", source="web"),
]


def _index(embedder: HashingEmbedder | None = None) -> EvidenceIndex:
    index = EvidenceIndex.open(":memory:")
    index.use_embedder(embedder)
    index.add_documents(DOCS)
    return index


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf((["x", "y"], ["y", "z"]), k=20)
    assert fused == {"x": round(1 / 21, 6), "y": round(1 / 22 + 1 / 21, 6), "z": round(1 / 22, 6)}


def test_lexical_index_has_no_vectors_and_searches_by_bm25() -> None:
    index = _index()
    assert index.dense.count() == 0 and not index.dense.active()
    hits = index.search("glaciers melting", lim=2)
    assert hits[0].doc_id == "a:0" and hits[0].score > 2 / 21  # -bm25, above any RRF score


def test_vectors_are_written_at_ingest_and_search_fuses() -> None:
    index = _index(HashingEmbedder())
    assert index.dense.count() == len(DOCS) and index.dense.active()
    hits = index.search("glaciers melting", lim=3)
    assert hits[0].doc_id == "a:0"
    # the best BM25 match: its cosine plus the full lexical weight
    cos = index.dense.sims("glaciers melting", ["a:0"])["a:0"]
    assert hits[0].score == round(cos + LEXICAL_WEIGHT, 6)
    assert all(h.score <= 1 + LEXICAL_WEIGHT for h in hits)
    assert [h.doc_id for h in index.search("ring", lim=5, src="web")] == ["c:0"]
    # the same query gives the same hits, byte for byte
    assert index.search("glaciers melting", lim=3) == hits


def test_dense_side_finds_what_bm25_cannot() -> None:
    # A word BM25 does not know at all, but whose character trigrams match.
    index = _index(HashingEmbedder())
    dense_only = index.dense.top("Jupiterian rings", 2)
    assert dense_only[0] == "c:0"
    lexical = EvidenceIndex.open(":memory:")
    lexical.add_documents(DOCS)
    assert lexical.search("Jupiterian", lim=5) == []


def test_rank_documents_orders_only_the_given_candidates() -> None:
    for emb in (None, HashingEmbedder()):
        index = _index(emb)
        ranked = index.rank_documents("sea level rise", ["a:0", "b:0", "zz", "b:0"])
        assert [d for d, _ in ranked] == ["b:0", "a:0"]  # unknown and repeated ids dropped
        assert ranked[0][1] > ranked[1][1] >= 0.0


def test_embedder_fill_and_cache_round_trip(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("x\n")
    index = _index()  # ingested without vectors
    emb = HashingEmbedder(dim=32)
    n, cached = attach_vectors(index, emb, corpus, cache_dir=tmp_path)
    assert (n, cached) == (len(DOCS), False)
    assert cache_path(corpus, emb.name, tmp_path).is_file()
    ids, mat = index.dense.export()
    again = _index()
    n2, cached2 = attach_vectors(again, emb, corpus, cache_dir=tmp_path)
    assert (n2, cached2) == (len(DOCS), True)
    ids2, mat2 = again.dense.export()
    assert ids == ids2 and np.array_equal(mat, mat2)
    assert again.search("sea level", lim=1)[0].doc_id == "b:0"


def test_a_session_adds_the_claim_level_request_and_ranks_the_pool() -> None:
    with Engine.open(None, config=EngineConfig(seed=False)) as engine:
        engine.index.use_embedder(HashingEmbedder())
        engine.index.add_documents(DOCS)
        config = {"claim_lim": 3, "rank": True, "docs_per_claim": 3, "per_claim": 3}
        head = engine.driver.run(engine.driver.start(
            "Glaciers worldwide are melting.", config=config).sid)
        st = head.state
        claim_level = [r for r in st.tool_requests if r["args"].get("lim") == 3
                       and r["tool"] == "web_search"]
        assert [r["args"]["q"] for r in claim_level] == ["Glaciers worldwide are melting."]
        items = next(iter(st.evidence.values()))
        assert items[0]["doc_id"] == "a:0"
        ranks = [it["rank"] for it in items]
        assert ranks == sorted(ranks, reverse=True)
        assert head.fsm == "DONE"
        # without the config keys: no claim-level request, no rank call
        plain = engine.driver.run(engine.driver.start("Glaciers worldwide are melting.").sid)
        assert not any(r["args"].get("q") == "Glaciers worldwide are melting."
                       for r in plain.state.tool_requests)


def test_score_fusion_scales_bm25_by_its_best_and_adds_cosine() -> None:
    fused = fuse_scores({"a": 8.0, "b": 4.0}, {"b": 0.5, "c": 0.9}, weight=0.5)
    assert fused == {"a": 0.5, "b": 0.75, "c": 0.9}
    assert fuse_scores({}, {"x": 0.25}) == {"x": 0.25}
    assert fuse_scores({"x": 0.0}, {}) == {"x": 0.0}
