"""The evidence the engine itself retrieves, for choosing the learned judge's thresholds.

Annotated sentences are what the model learns from, but in a session it judges the
sentences EXTRACT ranked first, which are more numerous and less on-topic. With a corpus,
``claimfsm train`` runs every claim through the real engine once (the evidence does not
depend on the judge), keeps each subclaim's first ``depth`` sentences, and chooses how
many of them to judge (``top``) and the probability thresholds on *those* verdicts, still
cross-validated by claim. Labels never reach the engine: sessions get the claim text only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from claimfsm.eval.data import Dataset
from claimfsm.eval.run import EVAL_CONFIG, open_engine

if TYPE_CHECKING:
    from claimfsm.skills.embed import Embedder

__all__ = ["DEPTH", "TOPS", "Retrieved", "retrieve_for_training"]

TOPS: tuple[int, ...] = (3, 5, 8, 10)
"""Candidate numbers of ranked sentences per subclaim the model judges."""
DEPTH = 20
"""Sentences kept per subclaim: all EXTRACT keeps (``per_claim``), so the evidence
reranker can bring a sentence from further down into the first ``max(TOPS)``."""


@dataclass(frozen=True)
class Retrieved:
    """Retrieved (subclaim text, sentence text) pairs; ``group`` is the claim index and
    ``rank`` the sentence's position in its subclaim's ranked evidence."""

    pairs: tuple[tuple[str, str], ...]
    group: npt.NDArray[np.int64]
    rank: npt.NDArray[np.int64]
    ids: tuple[str, ...] = ()
    """Each pair's sentence id (the verdict head reads a sentence once per claim)."""
    value: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    """Each sentence's ``rank`` value in EXTRACT's output (the evidence reranker's input)."""
    coverage: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    """Each sentence's key-term coverage (``score`` in EXTRACT's output)."""


def retrieve_for_training(
    data: Dataset, corpus: str | Path, *, depth: int = DEPTH,
    on_claim: Callable[[int, int], None] | None = None, embedder: Embedder | None = None,
) -> Retrieved:
    """Run each claim (text only) through an engine over ``corpus`` (hybrid retrieval with
    ``embedder``, as ``claimfsm eval`` does); keep the first ``depth`` evidence sentences
    of every subclaim."""
    engine, _ = open_engine(corpus, embedder=embedder)
    ids: list[str] = []
    pairs: list[tuple[str, str]] = []
    group: list[int] = []
    rank: list[int] = []
    value: list[float] = []
    coverage: list[float] = []
    try:
        for n, claim in enumerate(data.claims):
            head = engine.driver.run(
                engine.driver.start(claim.claim, config=dict(EVAL_CONFIG)).sid)
            texts = {s["id"]: s["c"] for s in head.state.subclaims}
            for sid, items in head.state.evidence.items():
                for r, item in enumerate(items[:depth]):
                    pairs.append((texts.get(sid, claim.claim), str(item["text"])))
                    ids.append(str(item["id"]))
                    group.append(n)
                    rank.append(r)
                    value.append(float(item.get("rank", 0.0)))
                    coverage.append(float(item.get("score", 0.0)))
            if on_claim is not None:
                on_claim(n + 1, len(data.claims))
    finally:
        engine.close()
    return Retrieved(tuple(pairs), np.asarray(group, dtype=np.int64),
                     np.asarray(rank, dtype=np.int64), tuple(ids),
                     np.asarray(value, dtype=np.float64), np.asarray(coverage, dtype=np.float64))
