"""Claim analysis for query planning: entities, the key predicate, numbers, content words.

Rules (deterministic, explainable, no model):

- **Entities** are acronyms (``NASA``), words with inner capitals (``iPhone``),
  capitalised words inside a sentence (``Moon``),
  and a capitalised sentence-initial word when the next word is capitalised too
  (``Barack Obama``) or is a verb (``Einstein won``) — unless it looks like a plural common
  noun (``Dogs are``). Adjacent entity words (and ``X of Y``) form one span, at most
  :data:`MAX_SPAN` words. Stopwords are never entities.
- The **key predicate** is the first verb form: an irregular past as written (``won``), a
  regular past nominalised (``landed`` -> ``landing``, same stem for BM25), or an ``-ing``
  form after ``is/was/...`` (``is driving``).
- **Numbers** are tokens holding a number (``1969``, ``10,000``, ``1960s``), as written.
- **Content words** are the remaining non-stopwords, lower-cased, possessives dropped;
  adjacent ones form phrases of up to :data:`MAX_PHRASE` words (``carbon dioxide``);
  generic ones (``percent``, ``years``) are flagged so the planner packs them last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from claimfsm._base.record import Record
from claimfsm.skills.analysis.lexicon import (
    GENERIC_WORDS,
    IRREGULAR_VERBS,
    PLURAL_AUXILIARIES,
    PROGRESSIVE_AUXILIARIES,
    QUERY_NOISE,
    is_finite_verb,
    is_regular_past,
)
from claimfsm.skills.analysis.text import STOPWORDS, numbers, words

__all__ = [
    "MAX_PHRASE",
    "MAX_SPAN",
    "Analysis",
    "Term",
    "TermKind",
    "Tok",
    "analyse",
    "gerund",
]

MAX_SPAN = 4
"""Longest entity span in words; longer runs are cut so any one term fits in a query."""
MAX_PHRASE = 3
"""Longest run of adjacent content words kept together as one term."""

TermKind = Literal["entity", "number", "predicate", "content", "generic"]

_YEAR = re.compile(r"\d{4}s?")
_SENTENCE_END = ".!?:;"
_OPENERS = " \t\r\n\"'“”‘’([{"


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Tok(Record, frozen=True):
    """One word of the claim with its offsets and flags."""

    text: str
    lower: str
    start: int
    end: int
    initial: bool
    gap: str  # the text between the previous word and this one

    def __init__(self, text: str, lower: str, start: int, end: int, initial: bool,
                 gap: str) -> None:
        self._fill(text=text, lower=lower, start=start, end=end, initial=initial, gap=gap)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Term(Record, frozen=True):
    """One query term: its surface form, kind, position in the claim and word count."""

    text: str
    kind: TermKind
    pos: int

    def __init__(self, text: str, kind: TermKind, pos: int) -> None:
        self._fill(text=text, kind=kind, pos=pos)

    @property
    def ntok(self) -> int:
        """Words this term adds to a query."""
        return len(self.text.split())


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Analysis(Record, frozen=True):
    """Everything the planner needs to know about one claim."""

    toks: tuple[Tok, ...]
    spans: tuple[tuple[int, int], ...]  # entity spans as [start, end) token indices
    terms: tuple[Term, ...]  # de-duplicated, in claim order

    def __init__(self, toks: tuple[Tok, ...], spans: tuple[tuple[int, int], ...],
                 terms: tuple[Term, ...]) -> None:
        self._fill(toks=toks, spans=spans, terms=terms)

    def of_kind(self, *kinds: TermKind) -> list[Term]:
        """Terms of the given kinds, in claim order."""
        return [t for t in self.terms if t.kind in kinds]

    @property
    def entities(self) -> list[Term]:
        """Entity spans, in claim order."""
        return self.of_kind("entity")

    @property
    def predicate(self) -> Term | None:
        """The key predicate, if the claim has a recognisable verb."""
        found = self.of_kind("predicate")
        return found[0] if found else None

    @property
    def years(self) -> list[int]:
        """Four-digit years (and decades: ``1960s`` -> 1960) mentioned in the claim."""
        return [int(t.text[:4]) for t in self.toks if _YEAR.fullmatch(t.text)]


def gerund(past: str) -> str:
    """``landed`` -> ``landing``, ``created`` -> ``creating``, ``planned`` -> ``planning``,
    ``married`` -> ``marrying``, ``agreed`` -> ``agreeing``."""
    w = past.lower()
    if w.endswith("ied"):
        return w[:-3] + "ying"
    if w.endswith("eed"):
        return w[:-1] + "ing"
    return w[:-2] + "ing"


def _tokenise(text: str) -> list[Tok]:
    out: list[Tok] = []
    pos = 0
    for w in words(text):
        start = text.find(w, pos)
        before = text[:start].rstrip(_OPENERS)
        initial = not before or before[-1] in _SENTENCE_END
        out.append(Tok(w, w.lower(), start, start + len(w), initial, text[pos:start]))
        pos = start + len(w)
    return out


def _is_acronym(w: str) -> bool:
    return sum(c.isupper() for c in w) >= 2 and not any(c.islower() for c in w)


def _capitalised(tok: Tok) -> bool:
    return tok.text[0].isupper() and tok.lower not in STOPWORDS


def _is_entity(toks: list[Tok], i: int) -> bool:
    tok = toks[i]
    if tok.lower in STOPWORDS or not tok.text[0].isalpha() or numbers(tok.text):
        return False
    if _is_acronym(tok.text) or any(c.isupper() for c in tok.text[1:]):
        return True  # NASA, iPhone, McDonald
    if not tok.text[0].isupper():
        return False
    if not tok.initial:
        return True
    nxt = toks[i + 1] if i + 1 < len(toks) else None
    if nxt is None or nxt.initial:
        return False
    if _capitalised(nxt) and _adjacent(tok, nxt):
        return True
    after = toks[i + 2] if i + 2 < len(toks) else None
    if nxt.lower == "of" and after is not None and _capitalised(after):
        return True  # "Bank of America was founded ..."
    if not is_finite_verb(nxt.lower, tok.lower):
        return False
    plural_noun = tok.lower.endswith("s") and nxt.lower in PLURAL_AUXILIARIES
    return not plural_noun


def _adjacent(a: Tok, b: Tok) -> bool:
    """Whether ``b`` directly follows ``a`` (only a space or a hyphen between them)."""
    return b.start > a.start and b.gap in (" ", "-")


def _spans(toks: list[Tok]) -> list[tuple[int, int]]:
    flags = [_is_entity(toks, i) for i in range(len(toks))]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(toks):
        if not flags[i]:
            i += 1
            continue
        j = i + 1
        while j < len(toks):
            if flags[j] and _adjacent(toks[j - 1], toks[j]) and not toks[j].initial:
                j += 1
            elif (toks[j].lower == "of" and j + 1 < len(toks) and flags[j + 1]
                  and _adjacent(toks[j - 1], toks[j]) and _adjacent(toks[j], toks[j + 1])):
                j += 2
            else:
                break
        # Long capitalised runs are cut into pieces so no single term overflows a query.
        spans.extend((k, min(k + MAX_SPAN, j)) for k in range(i, j, MAX_SPAN))
        i = j
    return spans


def _predicate(toks: list[Tok], i: int) -> str | None:
    tok = toks[i]
    prev = toks[i - 1].lower if i > 0 else None
    if tok.text[0].isupper() and not tok.initial:
        return None
    if tok.lower in IRREGULAR_VERBS and is_finite_verb(tok.lower, prev):
        return tok.lower
    if is_regular_past(tok.lower) and is_finite_verb(tok.lower, prev):
        return gerund(tok.lower)
    if tok.lower.endswith("ing") and len(tok.lower) > 4 and prev in PROGRESSIVE_AUXILIARIES:
        return tok.lower
    return None


def _content(tok: Tok) -> str | None:
    low = tok.lower
    if low.endswith("'s"):
        low = low[:-2]
    if "'" in low or low in STOPWORDS or low in QUERY_NOISE:
        return None
    if len(low) < 2 or not any(c.isalpha() for c in low):
        return None
    return low


def _entity_text(toks: list[Tok], span: tuple[int, int]) -> str:
    parts = [t.text for t in toks[span[0] : span[1]]]
    if parts[-1].lower().endswith("'s"):
        parts[-1] = parts[-1][:-2]
    return " ".join(parts)


def analyse(text: str) -> Analysis:
    """Split one claim into entity, number, predicate and content terms (see module doc)."""
    toks = _tokenise(text)
    spans = _spans(toks)
    in_span = {k: s for s in spans for k in range(s[0], s[1])}
    terms: list[Term] = []
    seen: set[str] = set()
    have_predicate = False
    phrase_end = -1  # token index ending the content phrase terms[-1], or -1

    def add(surface: str, kind: TermKind, pos: int) -> bool:
        key = surface.lower()
        if not surface or key in seen:
            return False
        seen.add(key)
        terms.append(Term(surface, kind, pos))
        return True

    for i, tok in enumerate(toks):
        span = in_span.get(i)
        if span is not None:
            if span[0] == i:
                add(_entity_text(toks, span), "entity", i)
            continue
        if numbers(tok.text):
            add(tok.text, "number", i)
            continue
        if not have_predicate:
            pred = _predicate(toks, i)
            if pred is not None:
                have_predicate = True
                add(pred, "predicate", i)
                continue
        word = _content(tok)
        if word is None:
            continue
        kind: TermKind = "generic" if word in GENERIC_WORDS else "content"
        last = terms[-1] if terms else None
        # Adjacent content words stay together ("carbon dioxide") so packing never
        # sends the halves of one compound to different queries.
        if (kind == "content" and last is not None and phrase_end == i - 1
                and _adjacent(toks[i - 1], tok) and last.ntok < MAX_PHRASE
                and word not in seen):
            seen.add(word)
            terms[-1] = Term(f"{last.text} {word}", "content", last.pos)
            phrase_end = i
        elif add(word, kind, i):
            phrase_end = i if kind == "content" else -1
    return Analysis(toks=tuple(toks), spans=tuple(spans), terms=tuple(terms))
