"""RETRIEVAL's wire records and the follow-up rule (seed 003).

After RETRIEVAL's requests ran, each subclaim's keywords are compared with the text of
its results (hit titles and snippets, fact triples), by stem. Uncovered keywords get a
follow-up request, and every follow-up says why it was made (``reason``, ``missing``), so
the revision that injects it explains itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import ConfigDict, Field

from claimfsm.skills.analysis.text import keywords, stem, tokens
from claimfsm.skills.base import BaseIO

__all__ = [
    "Claim",
    "Coverage",
    "Followup",
    "PlanIn",
    "Request",
    "ResultRec",
    "coverage",
    "next_followups",
]

_SOURCES = ("wiki", "web", "news")


class Claim(BaseIO):
    """A subclaim: id and text."""

    id: str
    c: str


class PlanIn(BaseIO):
    """A query plan (seed 002)."""

    id: str
    q: list[str]
    src: list[str]
    lim: int


class _Aliased(BaseIO):
    """Models with a ``for`` field (a Python keyword): ``for_`` in code, ``for`` on the wire."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid", populate_by_name=True)


class Request(_Aliased):
    """One tool request (seed 000's ``tr`` entry)."""

    id: str
    tool: str
    args: dict[str, Any]
    # ``for`` is a keyword in Python; the wire name is kept.
    for_: str = Field(alias="for")


class ResultRec(_Aliased):
    """The outcome of one request."""

    id: str
    for_: str = Field(alias="for")
    tool: str
    ok: bool
    code: str | None = None
    msg: str = ""
    value: dict[str, Any] | None = None


class Followup(_Aliased):
    """An injected follow-up request and why it was made."""

    id: str
    for_: str = Field(alias="for")
    tool: str
    round: int = 0
    missing: list[str]
    reason: str


class Coverage(BaseIO):
    """Which of a subclaim's keywords its results cover."""

    id: str
    covered: list[str]
    missing: list[str]



def _result_text(rec: ResultRec) -> str:
    if not rec.ok or rec.value is None:
        return ""
    parts: list[str] = []
    for hit in rec.value.get("hits", []):
        parts.append(str(hit.get("title", "")))
        parts.append(str(hit.get("snippet", "")))
    for fact in rec.value.get("facts", []):
        parts.extend(str(fact.get(k, "")) for k in ("subject", "relation", "object"))
    return " ".join(parts)


@lru_cache(maxsize=1024)
def _stems(text: str) -> frozenset[str]:
    # Every RETRIEVAL step reads all the session's results so far: each text once.
    return frozenset(stem(t) for t in tokens(text))


def coverage(claims: Sequence[Claim], results: Sequence[ResultRec]) -> list[Coverage]:
    """Which of each subclaim's keywords its results' text covers (by stem)."""
    out: list[Coverage] = []
    for claim in claims:
        seen: set[str] = set()
        for r in results:
            if r.for_ == claim.id:
                seen |= _stems(_result_text(r))
        kws = keywords(claim.c)
        out.append(
            Coverage(
                id=claim.id,
                covered=[k for k in kws if stem(k) in seen],
                missing=[k for k in kws if stem(k) not in seen],
            )
        )
    return out


def next_followups(
    claims: Sequence[Claim],
    plans: Sequence[PlanIn],
    tr: Sequence[Request],
    results: Sequence[ResultRec],
    done: Sequence[Followup],
    *,
    missing: Sequence[str] = (),
    round: int = 0,
) -> list[tuple[Request, Followup]]:
    """The follow-up requests to inject now (empty when there is nothing left to try).

    Round 0: for each subclaim whose keywords its results do not all cover, a ``search``
    on a source not yet tried for it, else a ``kb_lookup``; each tool at most once per
    subclaim, so the loop always ends. Round ``n > 0`` (back from EXTRACT): one
    ``web_search`` per subclaim in ``missing``, once per round.
    """
    used = {(f.for_, f.tool, f.round) for f in done}
    n = len(tr)
    new: list[tuple[Request, Followup]] = []

    def add(sid: str, tool: str, args: dict[str, Any], gaps: list[str], reason: str) -> None:
        nonlocal n
        n += 1
        rid = f"t{n}"
        new.append(
            (
                Request(id=rid, tool=tool, args=args, for_=sid),
                Followup(id=rid, for_=sid, tool=tool, round=round, missing=gaps, reason=reason),
            )
        )

    if round > 0:
        by_id = {c.id: c for c in claims}
        for sid in missing:
            if sid in by_id and (sid, "web_search", round) not in used:
                q = " ".join(keywords(by_id[sid].c)[:8])
                if q:
                    add(sid, "web_search", {"q": q, "lim": 5}, [],
                        f"round {round}: no evidence extracted for {sid}")
        return new

    lim_of = {p.id: p.lim for p in plans}
    for cov in coverage(claims, results):
        if not cov.missing:
            continue
        q = " ".join(cov.missing[:8])
        why = "keywords not covered by results: " + ", ".join(cov.missing)
        lim = lim_of.get(cov.id, 4)
        if (cov.id, "search", 0) not in used:
            tried = {str(r.args.get("src")) for r in tr if r.for_ == cov.id}
            fresh = [s for s in _SOURCES if s not in tried]
            if fresh:
                add(cov.id, "search", {"q": q, "lim": lim, "src": fresh[0]}, cov.missing, why)
                continue
        if (cov.id, "kb_lookup", 0) not in used:
            add(cov.id, "kb_lookup", {"q": q, "lim": lim, "src": "kb"}, cov.missing, why)
    return new
