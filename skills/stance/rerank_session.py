"""EXTRACT's use of a model's evidence reranker (:mod:`claimfsm.skills.stance.rerank`).

Only a learned profile gets here (EXTRACT's input carries ``stance_model`` and the claim
only then). Anything that keeps the reranker from running (numpy missing, an unreadable
file, a model without a reranker or a verdict head, its embedder not installed) leaves
the evidence in the engine's own order: VERIFY reports an unusable model itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["Candidate", "rerank_evidence"]

Candidate = tuple[str, str, float, float]
"""``(document id, sentence text, the engine's rank value, key-term coverage)``."""


def rerank_evidence(
    claim: str, subclaims: Mapping[str, str], lists: Mapping[str, Sequence[Candidate]],
    model_path: str,
) -> dict[str, list[tuple[int, float]]] | None:
    """For each subclaim (id -> text in ``subclaims``), ``(index into its list, new
    rank)`` best first; None when the reranker cannot run here."""
    try:
        import numpy as np

        from claimfsm.skills.stance.learned import head_embedder
        from claimfsm.skills.stance.model import Featurizer, ModelError, cached_model
        from claimfsm.skills.stance.model_features import LEXICAL_FEATURES
        from claimfsm.skills.stance.rerank import history_rows, rerank_row
    except ImportError:
        return None
    try:
        model, _, _ = cached_model(model_path)
    except ModelError:
        return None
    head, reranker = model.verdict, model.reranker
    if reranker is None or head is None or head.bank is None:
        return None
    emb, _ = head_embedder(model)
    if emb is None:
        return None
    texts = list(dict.fromkeys(t for items in lists.values() for _, t, _, _ in items))
    vecs = np.asarray(emb.encode([claim, *texts]), dtype=np.float64)
    cvec = vecs[0]
    at = {t: vecs[i + 1] for i, t in enumerate(texts)}
    history = reranker.history()
    n_subs = sum(1 for items in lists.values() if items)
    lexical = Featurizer()
    out: dict[str, list[tuple[int, float]]] = {}
    for sid, items in lists.items():
        if not items:
            out[sid] = []
            continue
        hist = history_rows([d for d, _, _, _ in items], cvec, history, head.bank)
        lex = lexical.matrix([(subclaims.get(sid, claim), t) for _, t, _, _ in items])
        x = np.asarray([rerank_row(n, rank, cov, n_subs, hist[n], float(at[t] @ cvec),
                                   lex[n, : len(LEXICAL_FEATURES)].tolist())
                        for n, (_, t, rank, cov) in enumerate(items)], dtype=np.float64)
        p = np.round(reranker.probabilities(x), 6)
        order = sorted(range(len(items)), key=lambda n: (-float(p[n]), n))
        out[sid] = [(n, float(p[n])) for n in order]
    return out
