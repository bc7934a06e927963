"""Per subclaim: combine sentence stances into one verdict, and spot disputes.

Evidence that strongly goes both ways is a dispute (:func:`is_disputed`), which
``verdict_aggregate`` reports as DISPUTED. Otherwise a side (REFUTES, then SUPPORTS)
wins when it has a clear sentence and beats the other side's best by ``win_margin``; it
cites the sentences it rests on. Thresholds are in :mod:`claimfsm.skills.stance.config`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from claimfsm.skills.stance.align import CHECKS
from claimfsm.skills.stance.config import DEFAULT_CONFIG, StanceConfig
from claimfsm.skills.stance.lexical import Label, Stance

__all__ = ["CHECK_PREFIX", "Combined", "combine_stances", "deciding_check", "is_disputed"]

CHECK_PREFIX = "check "
"""A judgment reason ``"check <evidence id>: <check>: <detail>"`` names the alignment
check (:data:`claimfsm.skills.stance.align.CHECKS`) that decided the subclaim."""


def _clip(x: float) -> float:
    return max(0.0, min(1.0, x))


class Combined(BaseModel):
    """One subclaim's verdict from its sentence stances."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    verdict: Label
    confidence: float
    cites: tuple[str, ...]
    reasons: tuple[str, ...]


def _best(stances: Iterable[tuple[str, float]], label: str) -> float:
    return max((s for lab, s in stances if lab == label), default=0.0)


def is_disputed(
    stances: Iterable[tuple[str, float]], config: StanceConfig = DEFAULT_CONFIG
) -> bool:
    """``(label, score)`` pairs strongly going both ways: the best support and the best
    refutation both reach ``dispute_min`` and lie within ``dispute_margin``."""
    pairs = list(stances)
    s, r = _best(pairs, "SUPPORTS"), _best(pairs, "REFUTES")
    return min(s, r) >= config.dispute_min and abs(s - r) < config.dispute_margin


def _noisy_or(scores: Iterable[float]) -> float:
    miss = 1.0
    for s in scores:
        miss *= 1.0 - s
    return 1.0 - miss


def _check_of(st: Stance) -> str | None:
    return next((r for r in st.reasons if r.split(":", 1)[0] in CHECKS), None)


def deciding_check(judged: Sequence[tuple[str, Stance]], label: Label) -> str | None:
    """The ``check ...`` reason for a verdict: for REFUTES the first check of its best
    refuting sentence; for NOT_ENOUGH_INFO the check that stopped the sentence closest to
    support (the lowest NOT_ENOUGH_INFO score)."""
    if label == "SUPPORTS":
        return None
    pool = [(st.score if label == "REFUTES" else -st.score, -n, eid, st)
            for n, (eid, st) in enumerate(judged) if st.label == label and _check_of(st)]
    if not pool:
        return None
    *_, eid, st = max(pool)
    return f"{CHECK_PREFIX}{eid}: {_check_of(st)}"


def combine_stances(
    judged: Sequence[tuple[str, Stance]], config: StanceConfig = DEFAULT_CONFIG
) -> Combined:
    """``(evidence id, stance)`` pairs -> a verdict. A side wins when it has a clear
    sentence (score >= ``clear_min``, ``refute_clear_min`` for REFUTES), the evidence is
    not disputed, and it beats the other side's best by ``win_margin``; its confidence
    is the noisy-or of its cited scores minus
    ``opposition_discount`` times the other side's best. Otherwise NOT_ENOUGH_INFO,
    with confidence 1 - the strongest clear score."""
    places = config.places
    if not judged:
        return Combined(verdict="NOT_ENOUGH_INFO", confidence=1.0, cites=(),
                        reasons=("no evidence",))
    ranked = sorted(enumerate(judged), key=lambda p: (-p[1][1].score, p[0]))
    side: dict[str, list[tuple[str, Stance]]] = {"SUPPORTS": [], "REFUTES": []}
    floor = {"SUPPORTS": config.clear_min, "REFUTES": config.refute_clear_min}
    for _, (eid, st) in ranked:
        if st.label in side and st.score >= floor[st.label]:
            side[st.label].append((eid, st))
    sup, ref = side["SUPPORTS"], side["REFUTES"]
    best_s = sup[0][1].score if sup else 0.0
    best_r = ref[0][1].score if ref else 0.0
    counts = f"{len(judged)} sentences: {len(sup)} clearly support, {len(ref)} clearly refute"
    torn = is_disputed([("SUPPORTS", best_s), ("REFUTES", best_r)], config)
    sides: tuple[tuple[Label, list[tuple[str, Stance]], float, float], ...] = (
        ("REFUTES", ref, best_r, best_s), ("SUPPORTS", sup, best_s, best_r))
    for label, win, best, other in sides:
        if win and not torn and best - other >= config.win_margin:
            top = win[: config.max_cites]
            conf = _clip(_noisy_or(st.score for _, st in top)
                         - config.opposition_discount * other)
            why = tuple(f"{eid}: " + "; ".join(st.reasons) for eid, st in top)
            check = deciding_check(top, label)
            return Combined(verdict=label, confidence=round(conf, places),
                            cites=tuple(eid for eid, _ in top),
                            reasons=(counts, *why, *([check] if check else [])))
    cites = tuple(eid for eid, _ in (sup[:1] + ref[:1]))
    if sup and ref:
        note = "evidence goes both ways" + (" (disputed)" if torn else "")
    else:
        note = "no sentence clearly supports or refutes"
    check = deciding_check(judged, "NOT_ENOUGH_INFO")
    return Combined(verdict="NOT_ENOUGH_INFO", confidence=round(1 - max(best_s, best_r), places),
                    cites=cites, reasons=(counts, note, *([check] if check else [])))
