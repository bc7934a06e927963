"""The evidence benchmarks run end to end on a small scale: both indexes get the same
documents and answer every query; RETRIEVAL with HTTP backends counts its calls. Their
figures are measurements (docs/retrieval.md); only what they count is checked here."""

from __future__ import annotations

import pytest

from claimfsm.bench.evidence import run
from claimfsm.bench.evidence_http import retrieval_with_delay


@pytest.mark.parametrize("with_pg", [False, True])
def test_both_indexes_get_the_same_documents(with_pg: bool,
                                            request: pytest.FixtureRequest) -> None:
    pg = request.getfixturevalue("pg_server").url if with_pg else None
    out = run(docs=300, queries=7, pg_url=pg)
    names = ["sqlite", "postgresql"] if with_pg else ["sqlite"]
    for name in names:
        fig = out[name]
        assert fig["documents"] == fig["added"] == 300 and fig["queries"] == 7
        assert 0 < fig["hits"] <= 35 and fig["query_ms_median"] <= fig["query_ms_p99"]
        assert fig["docs_per_s"] > 0
    assert ("postgresql" in out) == with_pg


def test_retrieval_over_http_counts_its_calls() -> None:
    out = retrieval_with_delay(delay_ms=5)
    assert out["subclaims"] == 4 and out["search_calls"] >= 8
    assert out["http_requests"] >= out["search_calls"]
    assert out["sum_of_delays_s"] == pytest.approx(out["http_requests"] * 0.005)
    assert out["mode"] == "concurrent"
