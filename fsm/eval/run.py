"""``claimfsm eval``: run every claim of a dataset through the real engine and score it.

The engine and the scorer are kept apart by construction:

- :func:`run_claim` gets an :class:`~claimfsm.eval.data.EvalClaim` (id and text only) and runs
  a full session, PARSE_CLAIM to DONE, in an engine whose in-memory index holds the
  corpus. It returns a :class:`ClaimRun`: the verdict, the ranked evidence and the
  citations.
- :func:`judge_sentences` gets a claim's text and the *texts* of its annotated evidence
  sentences (never their labels) and runs the VERIFY and AGGREGATE skills on them.
- :func:`score` is the only place that reads the gold labels.

Ranked list for recall@k: the session's final evidence (EXTRACT's output), every
subclaim's list merged by score, mapped from sentence ids ``"Article:12#0"`` to document
ids ``"Article:12"`` and de-duplicated. Sessions run with :data:`EVAL_CONFIG`, which asks
EXTRACT to keep up to 20 sentences per subclaim so recall@20 is measurable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from claimfsm._base.models import Frozen
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import RUN_CONFIG
from claimfsm.engine.runtime import Engine
from claimfsm.engine.settings import SessionSettings
from claimfsm.eval.data import CLAIM_LABELS, EVIDENCE_LABELS, Dataset, EvalClaim, GoldClaim
from claimfsm.eval.embed import CACHE_DIR, attach_vectors
from claimfsm.eval.metrics import (
    PLACES,
    ClassScores,
    RetrievalScores,
    classification,
    doc_of,
    retrieval,
    strict_hit,
)
from claimfsm.eval.timing import StepSplit, StepTimer
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.embed import Embedder
from claimfsm.skills.parse_claim import subclaims
from claimfsm.skills.stance.align import CHECKS
from claimfsm.skills.stance_judge import SKILL as VERIFY
from claimfsm.skills.tools.ingest import IngestReport, ProgressCallback, ingest_corpus
from claimfsm.skills.verdict_aggregate import SKILL as AGGREGATE
from claimfsm.skills.verdict_aggregate import Verdict, warnings
from claimfsm.state.open import Location

__all__ = [
    "EVAL_CONFIG",
    "EVAL_NOW",
    "ClaimRun",
    "EvalReport",
    "GoldRun",
    "evaluate",
    "judge_sentences",
    "open_engine",
    "ranked_documents",
    "run_claim",
    "score",
]

EVAL_NOW = datetime(2026, 1, 1, tzinfo=UTC)
"""Every session's clock reading, so a report does not depend on the day it runs."""

EVAL_CONFIG: Mapping[str, Any] = RUN_CONFIG
"""The settings every session runs with (:data:`claimfsm.engine.profile.RUN_CONFIG`);
``claimfsm eval``
adds the verification profile exactly as ``verify`` does (``Profile.config()``), so both
compute the same verdict and evidence for a claim."""


class ClaimRun(Frozen):
    """What the engine said about one claim."""

    id: str
    label: str
    """The verdict; ``NOT_ENOUGH_INFO`` when the session did not reach DONE."""
    finished: bool
    ranked: tuple[str, ...]
    """Evidence document ids, best first, every subclaim merged."""
    cites: tuple[str, ...]
    """Document ids of the verdict's citations, in the verdict's order."""
    error: str | None = None
    checks: tuple[str, ...] = ()
    """The alignment checks the verdict's warnings name (one per warning)."""


class GoldRun(Frozen):
    """The VERIFY and AGGREGATE skills run on a claim's annotated evidence sentences."""

    id: str
    label: str
    stances: dict[str, str]
    """Evidence id -> the judge's stance on it, judged against the whole claim."""


class EvalReport(Frozen):
    """Every figure ``claimfsm eval`` prints."""

    claims: int
    retrieval: RetrievalScores
    stance: ClassScores
    verdict: ClassScores
    verdict_gold: ClassScores
    strict: float
    claims_per_s: float
    checks: dict[str, int]
    failed: int = 0
    seconds: float = 0.0
    """How many claims' verdicts carry a warning of each alignment check (a claim counts
    once per check), over :data:`claimfsm.skills.stance.align.CHECKS`."""
    split: StepSplit = StepSplit()
    """The sessions' time by state (skill) and by tool (``--json``: ``split``)."""

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document: exactly the keys the issue names."""

        def cls(c: ClassScores) -> dict[str, Any]:
            return {"accuracy": c.accuracy, "macro_f1": c.macro_f1,
                    "per_class": dict(c.per_class), "precision": dict(c.precision),
                    "recall": dict(c.recall), "confusion": c.confusion}

        r = self.retrieval
        return {
            "claims": self.claims,
            "retrieval": {"recall@5": r.recall_at_5, "recall@10": r.recall_at_10,
                          "recall@20": r.recall_at_20, "hit@5": r.hit_at_5},
            "stance": {"accuracy": self.stance.accuracy, "macro_f1": self.stance.macro_f1},
            "verdict": cls(self.verdict),
            "verdict_gold": cls(self.verdict_gold),
            "strict": self.strict,
            "claims_per_s": self.claims_per_s,
            "checks": dict(self.checks),
            "split": self.split.to_json(self.claims),
        }


def open_engine(
    corpus: str | Path, *, on_progress: ProgressCallback | None = None,
    embedder: Embedder | None = None, cache_dir: Path | None = CACHE_DIR,
    index: str | None = None,
) -> tuple[Engine, IngestReport]:
    """An in-memory engine (no demo seed) whose index holds ``corpus`` as wiki documents,
    one per sentence, the article title searchable; with ``embedder``, every document
    also gets a dense vector (cached in ``cache_dir``) and retrieval is hybrid. ``index``
    evaluates that index instead of a new one in memory (a ``postgresql://`` URL or a
    SQLite file; the sessions stay in memory)."""
    config = EngineConfig(seed=False, clock=FixedClock(EVAL_NOW))
    where = None if index is None else Location(store=":memory:", index=index, url=False,
                                                text=":memory:")
    engine = Engine.open(where, config=config)
    report = ingest_corpus(engine.index, corpus, source="wiki", on_progress=on_progress)
    if embedder is not None and report.added:
        attach_vectors(engine.index, embedder, corpus, cache_dir=cache_dir)
    return engine, report


def ranked_documents(evidence: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[str, ...]:
    """Document ids of a session's evidence, best ``rank`` first (then ``score``; ties:
    subclaim order, then position), each once."""
    items = [(-float(it.get("rank", 0.0)), -float(it.get("score", 0.0)), n, k,
              doc_of(str(it["id"])))
             for n, sub in enumerate(evidence.values()) for k, it in enumerate(sub)]
    return tuple(dict.fromkeys(doc for *_, doc in sorted(items)))


def run_claim(
    engine: Engine, claim: EvalClaim, config: Mapping[str, Any] = EVAL_CONFIG
) -> ClaimRun:
    """One full session for ``claim``, PARSE_CLAIM to a final state."""
    head = engine.driver.run(engine.driver.start(claim.claim, config=dict(config)).sid)
    st = head.state
    verdict = st.verdict or {}
    finished = head.fsm == "DONE" and bool(verdict)
    error = (st.error or {}).get("code") if not finished else None
    return ClaimRun(
        id=claim.id,
        label=str(verdict.get("label", "NOT_ENOUGH_INFO")) if finished else "NOT_ENOUGH_INFO",
        finished=finished,
        ranked=ranked_documents(st.evidence),
        cites=tuple(doc_of(c) for c in verdict.get("cites", [])),
        error=error or (None if finished else f"stopped in {head.fsm}"),
        checks=tuple(dict.fromkeys(check for _, check, _, _ in warnings(Verdict.model_validate(
            verdict)))) if finished else (),
    )


def _evidence_items(sentences: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    # Ids mirror what EXTRACT produces for a one-sentence corpus document.
    return [{"id": f"{eid}#0", "doc_id": eid, "text": text, "source": "wiki", "score": 0.0}
            for eid, text in sentences]


def _verify(
    claims: list[dict[str, str]], items: list[dict[str, Any]], config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    st = {"sid": "eval", "rev": 0, "fsm": "VERIFY"}
    judge = SessionSettings.of(config).judge_input()  # as the bindings pass it
    env = VERIFY.run({"claims": claims, "evidence": {c["id"]: items for c in claims},
                      **judge, "st": st}, SkillContext(clock=FixedClock(EVAL_NOW)))
    if env.s != "ok" or env.d is None:
        return []
    judgments: list[dict[str, Any]] = env.d["judgments"]
    return judgments


def judge_sentences(
    cid: str, claim: str, sentences: Sequence[tuple[str, str]],
    config: Mapping[str, Any] = EVAL_CONFIG,
) -> GoldRun:
    """Run VERIFY (and AGGREGATE) on ``(evidence_id, text)`` sentences given as evidence
    to every subclaim of ``claim``, with the judge profile of ``config`` (as a session
    would). Stances are judged against the whole claim."""
    items = _evidence_items(sentences)
    whole = [{"id": "s1", "c": claim}]
    judged = _verify(whole, items, config)
    stances = {doc_of(s["id"]): str(s["label"]) for s in (judged[0]["stances"] if judged else [])}
    parts = [c.model_dump() for c in subclaims(claim)] or whole
    judgments = judged if parts == whole else _verify(parts, items, config)
    judge = SessionSettings.of(config).judge_input()
    env = AGGREGATE.run({"claims": parts, "judgments": judgments, **judge,
                         "st": {"sid": "eval", "rev": 1, "fsm": "AGGREGATE"}},
                        SkillContext(clock=FixedClock(EVAL_NOW)))
    label = str(env.d["verdict"]["label"]) if env.s == "ok" and env.d else "NOT_ENOUGH_INFO"
    return GoldRun(id=cid, label=label, stances=stances)


def score(
    gold: Sequence[GoldClaim], runs: Sequence[ClaimRun], gold_runs: Sequence[GoldRun],
    *, seconds: float, split: StepSplit | None = None,
) -> EvalReport:
    """Every figure of the report from the engine's runs and the gold (the only reader
    of gold labels)."""
    by_run = {r.id: r for r in runs}
    by_gold = {g.id: g for g in gold_runs}
    pairs = [(g, by_run[g.id], by_gold[g.id]) for g in gold]
    stance_pairs = [(e.label, gr.stances.get(e.evidence_id, "NOT_ENOUGH_INFO"))
                    for g, _, gr in pairs for e in g.evidences]
    strict = [strict_hit(g.label, r.label, r.cites, g.with_label("SUPPORTS"),
                         g.with_label("REFUTES")) for g, r, _ in pairs]
    n = len(pairs)
    return EvalReport(
        claims=n,
        retrieval=retrieval([r.ranked for _, r, _ in pairs], [g.decisive for g, _, _ in pairs]),
        stance=classification(stance_pairs, EVIDENCE_LABELS),
        verdict=classification(((g.label, r.label) for g, r, _ in pairs), CLAIM_LABELS),
        verdict_gold=classification(((g.label, gr.label) for g, _, gr in pairs), CLAIM_LABELS),
        strict=round(sum(strict) / n, PLACES) if n else 0.0,
        claims_per_s=round(n / seconds, 2) if seconds > 0 else 0.0,
        failed=sum(1 for _, r, _ in pairs if not r.finished),
        seconds=round(seconds, 3),
        split=split or StepSplit(),
        checks={name: sum(1 for _, r, _ in pairs if name in r.checks) for name in CHECKS},
    )


def evaluate(
    engine: Engine,
    dataset: Dataset,
    *,
    config: Mapping[str, Any] = EVAL_CONFIG,
    on_claim: Callable[[int, int], None] | None = None,
    timer: Callable[[], float] = time.perf_counter,
) -> EvalReport:
    """Run every claim through ``engine`` (timed: ``claims_per_s``), judge the annotated
    sentences, and score. ``on_claim(done, total)`` reports progress."""
    total = len(dataset.claims)
    runs: list[ClaimRun] = []
    driver = engine.driver
    watch = StepTimer(driver.observer)
    driver.observer = watch
    start, began, cpu = timer(), time.perf_counter(), time.process_time()
    try:
        for n, claim in enumerate(dataset.claims, start=1):
            runs.append(run_claim(engine, claim, config))
            if on_claim is not None:
                on_claim(n, total)
        seconds = timer() - start
    finally:
        driver.observer = watch.inner
    split = watch.split(time.perf_counter() - began, time.process_time() - cpu)
    texts = {c.id: c.claim for c in dataset.claims}
    # Only the sentences' ids and texts cross over to the judge; their labels stay here.
    gold_runs = [judge_sentences(g.id, texts[g.id],
                                 [(e.evidence_id, e.text) for e in g.evidences], config)
                 for g in dataset.gold]
    return score(dataset.gold, runs, gold_runs, seconds=seconds, split=split)
