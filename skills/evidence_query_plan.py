"""Evidence Query Planner (seed 002), the planning half of PARSE_CLAIM.

For each subclaim: 1-4 short queries (<= 8 words each) built from the claim's entities,
content words, key predicate (nominalised) and numbers, in that order; disambiguation
queries when the main entity is a single everyday word (``Lost`` -> ``Lost (TV series)``);
the sources and the result limit from :mod:`claimfsm.skills.analysis.sources`. The card is
``skills/cards/evidence_query_plan.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import Field, model_validator

from claimfsm.skills.analysis.lexicon import COMMON_TITLE_WORDS
from claimfsm.skills.analysis.sources import Source, choose_lim, choose_sources
from claimfsm.skills.analysis.terms import Analysis, Term, analyse
from claimfsm.skills.analysis.text import stem, tokens, words
from claimfsm.skills.base import BaseIO, Skill, StRef
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.limits import MAX_CLAIM_CHARS, MAX_LIST, MAX_SUBCLAIMS
from claimfsm.skills.versions import SKILL_VERSIONS

__all__ = [
    "FIXED_HINTS",
    "MAX_QUERIES",
    "MAX_TOKENS",
    "SKILL",
    "Claim",
    "Input",
    "Output",
    "Plan",
    "handler",
    "plan_claims",
    "query_tokens",
]

MAX_TOKENS = 8
MAX_QUERIES = 4
FIXED_HINTS: tuple[str, ...] = ("TV series", "film", "album", "song", "book")

# Words in a claim that point at one reading of an ambiguous title.
_HINT_CUES: dict[str, str] = {
    "TV series": "series season episode show television tv sitcom aired network",
    "film": "film movie directed director starring cinema actor actress box office",
    "album": "album record band tracks lp studio",
    "song": "song single lyrics chart charted sang sung",
    "book": "book novel author wrote written published publisher chapter",
}
# Surface order inside a query: entities, content words, predicate, numbers.
_RANK = {"entity": 0, "content": 1, "generic": 1, "predicate": 2, "number": 3}


class Claim(BaseIO):
    """One subclaim: ``{id, c}``."""

    id: str = Field(min_length=1, max_length=64)
    c: str = Field(max_length=MAX_CLAIM_CHARS)


class Plan(BaseIO):
    """The query plan for one subclaim."""

    id: str
    q: list[str] = Field(min_length=1, max_length=MAX_QUERIES)
    src: list[Source] = Field(min_length=1)
    lim: int = Field(ge=3, le=5)


class Input(BaseIO):
    """Subclaims, the session ref and optional disambiguation hints."""

    claims: list[Claim] = Field(max_length=MAX_SUBCLAIMS)
    st: StRef
    hints: list[str] | None = Field(None, max_length=MAX_LIST)

    @model_validator(mode="after")
    def _unique_ids(self) -> Input:
        ids = [c.id for c in self.claims]
        dup = next((i for i in ids if ids.count(i) > 1), None)
        if dup is not None:
            raise ValueError(f"claims: duplicate id {dup!r}")
        return self


class Output(BaseIO):
    """``d`` without ``sp``: one plan per subclaim, in claim order."""

    plans: list[Plan]


def query_tokens(q: str) -> int:
    """How many tokens a query has (whitespace-separated words; the 8-token limit)."""
    return len(q.split())


def _render(terms: list[Term]) -> str:
    return " ".join(t.text for t in sorted(terms, key=lambda t: (_RANK[t.kind], t.pos)))


def _priority(a: Analysis) -> list[Term]:
    # The main entity anchors the claim; numbers are constraints that must survive.
    ents = a.entities
    return [
        *ents[:1], *a.of_kind("number"), *a.of_kind("predicate"), *ents[1:],
        *a.of_kind("content"), *a.of_kind("generic"),
    ]


def _anchor(a: Analysis) -> list[Term]:
    """What every follow-on query repeats so it stays about the same subject."""
    if a.entities:
        return a.entities[:1]
    words_ = a.of_kind("content", "generic")
    if not words_:
        return []
    if len(words_) > 1 and words_[1].pos == words_[0].pos + 1:
        return words_[:2]  # "global warming", "sea level"
    return words_[:1]


def _pack(a: Analysis, max_queries: int) -> list[str]:
    """Pack terms by priority into queries of <= MAX_TOKENS words: entities, numbers
    and the predicate first-fit, content words in claim order."""
    remaining, anchor = _priority(a), _anchor(a)
    out: list[str] = []
    while remaining and len(out) < max_queries:
        chosen = list(anchor) if out else []
        used = sum(t.ntok for t in chosen)
        left: list[Term] = []
        words_full = False
        for term in remaining:
            if term in chosen:
                continue
            wordy = term.kind in ("content", "generic")
            if used + term.ntok <= MAX_TOKENS and not (wordy and words_full):
                chosen.append(term)
                used += term.ntok
            else:
                # Content words keep claim order: once one misses, the rest wait for the
                # next query rather than a later small word jumping ahead of it.
                words_full = words_full or wordy
                left.append(term)
        fresh = [t for t in chosen if t not in anchor] if out else chosen
        if out and all(t.kind == "generic" for t in fresh):
            break  # leftovers like "percent" alone are not worth a query
        out.append(_render(chosen))
        remaining = left
    return out


def _clean_hints(hints: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for h in hints or ():
        norm = " ".join(h.split())
        if norm and norm.lower() not in {o.lower() for o in out}:
            out.append(norm)
    return out


def _ambiguous_entity(a: Analysis, user_hints: bool) -> Term | None:
    """The main entity when it is one everyday word (or the user sent hints for it)."""
    ents = a.entities
    if not ents or ents[0].ntok != 1 or ents[0].text.isupper():
        return None
    main = ents[0]
    return main if user_hints or main.text.lower() in COMMON_TITLE_WORDS else None


def _rank_hints(hints: list[str], a: Analysis, main: Term) -> list[str]:
    claim = {stem(t) for t in tokens(" ".join(x.text for x in a.toks))} - {stem(main.text)}

    def score(h: str) -> int:
        cues = {stem(t) for t in tokens(h + " " + _HINT_CUES.get(h, ""))}
        return len(cues & claim)

    order = sorted(range(len(hints)), key=lambda i: (-score(hints[i]), i))
    return [hints[i] for i in order]


def _disambiguation(main: Term, a: Analysis, hints: list[str]) -> list[str]:
    """The best hint in plain form with the claim's numbers (``Lost TV series 2004``),
    then Wikipedia-style titles (``Lost (TV series)``) for the hints in rank order."""
    ranked = _rank_hints(hints, a, main)
    out: list[str] = []
    plain = f"{main.text} {ranked[0]}"
    nums = [t.text for t in a.of_kind("number")]
    fitting = [n for i, n in enumerate(nums) if query_tokens(plain) + i + 1 <= MAX_TOKENS]
    if fitting:
        out.append(" ".join([plain, *fitting]))
    out.extend(f"{main.text} ({h})" for h in ranked)
    return out


def _queries(text: str, a: Analysis, hints: list[str]) -> list[str]:
    if not a.terms:  # only stopwords: search the words themselves
        return [" ".join(tokens(text)[:MAX_TOKENS])]
    main = _ambiguous_entity(a, bool(hints))
    if main is None:
        return _pack(a, MAX_QUERIES)
    # Base queries keep two slots at most so disambiguation always gets the rest.
    candidates = [*_pack(a, 2), *_disambiguation(main, a, hints or list(FIXED_HINTS))]
    out: list[str] = []
    for q in candidates:
        if q.lower() not in {o.lower() for o in out}:
            out.append(q)
    return out[:MAX_QUERIES]


def plan_claims(
    claims: Sequence[Claim], *, hints: Sequence[str] | None = None, now: datetime
) -> list[Plan] | Envelope:
    """Plan every claim; ``NO_CLAIMS`` or ``QUERY_TOO_LONG`` as an error envelope.

    ``now`` is the injected clock's reading: it decides what counts as recent.
    """
    if not claims:
        return Envelope.error("NO_CLAIMS", "claims: empty list, nothing to plan", rb="state")
    user_hints = _clean_hints(hints)
    plans: list[Plan] = []
    for i, claim in enumerate(claims):
        if not words(claim.c):
            return Envelope.error(
                "NO_CLAIMS", f"claims.{i}.c: claim text is empty or has no words", rb="state"
            )
        a = analyse(claim.c)
        qs = _queries(claim.c, a, user_hints)
        for j, q in enumerate(qs):
            if query_tokens(q) > MAX_TOKENS:
                origin = "hints" if user_hints else f"claims.{i}.c"
                return Envelope.error(
                    "QUERY_TOO_LONG",
                    f"{origin}: query {j + 1} of claim {claim.id!r} has {query_tokens(q)} "
                    f"tokens (max {MAX_TOKENS}): {q!r}",
                    rb="state",
                )
        src = choose_sources(claim.c, a, now)
        plans.append(Plan(id=claim.id, q=qs, src=src, lim=choose_lim(src, len(qs))))
    return plans


def handler(inp: Input, ctx: SkillContext) -> Envelope:
    """Plan queries for ``inp.claims`` and move the session to RETRIEVAL."""
    plans = plan_claims(inp.claims, hints=inp.hints, now=ctx.clock.now())
    if isinstance(plans, Envelope):
        return plans
    return Envelope.ok(
        Output(plans=plans).model_dump(mode="json"), rev=inp.st.rev + 1, fsm="RETRIEVAL"
    )


SKILL: Skill[Input, Output] = Skill(
    name="evidence_query_plan",
    input_model=Input,
    output_model=Output,
    handler=handler,
    rb_on_error="state",
    description="Plan 1-4 short, deterministic evidence queries (with sources and limit) "
    "for each subclaim.",
    version=SKILL_VERSIONS["evidence_query_plan"],
)
