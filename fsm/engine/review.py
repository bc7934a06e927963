"""REVIEW: a person approves the claim's verdict, overrides it, or sends it back.

The claim machine's wait state between AGGREGATE and DONE (docs/review.md). Whether a
session enters it is the profile's ``review`` option: ``never`` (the default: sessions
and records are as before), ``always``, or ``low_confidence``, which reviews a verdict
that is NOT_ENOUGH_INFO or DISPUTED, or rests on a subclaim judged with confidence
below :data:`LOW_CONFIDENCE`. The input is exactly one of::

    {"decision": "approve"}
    {"decision": "override", "verdict": "SUPPORTS|REFUTES|NOT_ENOUGH_INFO|DISPUTED",
     "reason": "..."}
    {"decision": "send_back", "queries": [...], "doc_ids": [...], "reason": "..."}

A decision sets the verdict's ``provenance`` to ``reviewer:NAME`` (a verdict without one
is the engine's) and its ``review`` (decision, actor, reason); sending back queues the
extra searches and document fetches as RETRIEVAL steps and clears the verdict.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from claimfsm.state.model import SessionState

__all__ = [
    "LOW_CONFIDENCE",
    "REVIEW_MODES",
    "ReviewInput",
    "apply_review",
    "needs_review",
    "provenance",
    "route_review",
]

#: A subclaim judged with confidence below this sends the verdict to review under
#: ``review = low_confidence``.
LOW_CONFIDENCE = 0.6
REVIEW_MODES: tuple[str, ...] = ("never", "low_confidence", "always")
_UNSURE = frozenset({"NOT_ENOUGH_INFO", "DISPUTED"})
_MAX_EXTRA = 20  # extra queries or documents per decision: a review, not a crawl

Text = Annotated[str, Field(min_length=1, max_length=2000)]
Item = Annotated[str, Field(min_length=1, max_length=500)]
Decision = Literal["approve", "override", "send_back"]
Label = Literal["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED"]
# The fields each decision takes, and those it requires.
_TAKES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "approve": (frozenset(), frozenset()),
    "override": (frozenset({"verdict", "reason"}), frozenset({"verdict", "reason"})),
    "send_back": (frozenset({"queries", "doc_ids", "reason"}), frozenset({"reason"})),
}


class ReviewInput(BaseModel):
    """A reviewer's decision: exactly one of the three shapes in the module docstring
    (a field another decision takes is refused, naming it)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    decision: Decision
    verdict: Label | None = None
    reason: Text | None = None
    queries: list[Item] | None = Field(default=None, max_length=_MAX_EXTRA)
    doc_ids: list[Item] | None = Field(default=None, max_length=_MAX_EXTRA)

    @model_validator(mode="after")
    def _one_shape(self) -> ReviewInput:
        takes, needs = _TAKES[self.decision]
        for name in sorted(self.model_fields_set - {"decision"}):
            if name not in takes:
                raise ValueError(f"{name}: not taken by decision {self.decision!r}")
        for name in sorted(needs):
            if getattr(self, name) is None:
                raise ValueError(f"{name}: required by decision {self.decision!r}")
        if self.decision == "send_back" and not (self.queries or self.doc_ids):
            raise ValueError("queries: send_back needs queries or doc_ids")
        return self


def needs_review(mode: str, verdict: dict[str, Any] | None,
                 judgments: list[dict[str, Any]]) -> bool:
    """Whether a verdict goes to REVIEW under ``mode`` (see the module docstring)."""
    if mode == "always":
        return True
    if mode != "low_confidence":
        return False
    if not verdict or verdict.get("label") in _UNSURE:
        return True
    return any(float(j.get("confidence", 1.0)) < LOW_CONFIDENCE for j in judgments)


def route_review(inp: ReviewInput) -> str:
    """Where a decision moves the session."""
    return "RETRIEVAL" if inp.decision == "send_back" else "DONE"


def provenance(verdict: dict[str, Any] | None) -> str | None:
    """``engine`` or ``reviewer:NAME`` for a verdict (``None`` without one)."""
    if not verdict:
        return None
    return str(verdict.get("provenance", "engine"))


def apply_review(state: SessionState, inp: ReviewInput, actor: str) -> dict[str, Any]:
    """The state fields a decision changes."""
    d = inp
    old = dict(state.verdict or {})
    review: dict[str, Any]
    if d.decision == "approve":
        review = {"decision": "approve", "actor": actor}
        return {"verdict": {**old, "provenance": f"reviewer:{actor}", "review": review}}
    if d.decision == "override":
        review = {"decision": "override", "actor": actor, "reason": d.reason,
                  "was": old.get("label")}
        reasons = [f"overridden by {actor}: {d.reason}", *old.get("reasons", [])]
        return {"verdict": {**old, "label": d.verdict, "reasons": reasons,
                            "provenance": f"reviewer:{actor}", "review": review}}
    return _send_back(state, d, actor)


def _send_back(state: SessionState, d: ReviewInput, actor: str) -> dict[str, Any]:
    from claimfsm.skills.plan_steps import PlanStep, steps_for

    subs = [c["id"] for c in state.subclaims] or ["s1"]
    n = len(state.tool_requests)
    requests: list[dict[str, Any]] = []
    for q in d.queries or ():
        for sub in subs:
            n += 1
            requests.append({"id": f"t{n}", "tool": "web_search",
                             "args": {"q": q, "lim": 5}, "for": sub})
    for doc in d.doc_ids or ():
        for sub in subs:
            n += 1
            requests.append({"id": f"t{n}", "tool": "page_fetch", "args": {"doc_id": doc},
                             "for": sub})
    known = [PlanStep.model_validate(s) for s in state.steps]
    why = f"sent back by {actor}: {d.reason}"
    steps = [s.dump() for s in steps_for(requests, known,
                                         reasons={r["id"]: why for r in requests})]
    return {"verdict": None, "judgments": [],
            "tool_requests": [*state.tool_requests, *requests],
            "steps": [*state.steps, *steps],
            "memory": {**state.memory, "review": {"decision": "send_back", "actor": actor,
                                                  "reason": d.reason}}}
