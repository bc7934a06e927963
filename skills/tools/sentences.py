"""Sentence splitting and lexical sentence ranking for evidence extraction.

The splitter is rule-based and deterministic: it ends a sentence at ``.``, ``!`` or ``?``
followed by whitespace and a capital letter or digit, except after titles (``Dr.``),
Latin abbreviations (``e.g.``), initials (``John F. Kennedy``) and dotted acronyms
(``U.S.``), which end a sentence only when a typical sentence opener follows. Decimals
(``1.5``) never split because no whitespace follows their dot.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from claimfsm.skills.analysis.text import keywords, stem, tokens

__all__ = ["RankedSentence", "rank_sentences", "split_sentences", "terms"]


class RankedSentence(BaseModel):
    """One sentence with its position in the document and its score (higher is better)."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    idx: int
    text: str
    score: float


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Abbreviations after which a period never ends a sentence.
_ABBREVIATIONS = _wordset(
    """
    mr mrs ms mx dr prof sr jr st mt ft messrs mme mlle gen col lt sgt capt cmdr adm gov
    sen rep rev hon pres supt insp det inc ltd co corp bros dept univ assn vs approx ca cf
    al eg ie viz jan feb mar apr jun jul aug sep sept oct nov dec
    """
)
# Abbreviations that only stand before a number ("No. 5", "Fig. 3", "pp. 10").
_NUMBER_ABBREVIATIONS = _wordset("no nos vol vols p pp fig figs art sec ch eq ref")
# Words that start sentences often enough that a preceding acronym or initial ("... in
# the U.S. The ...") is taken to end the sentence.
_OPENERS = _wordset(
    """
    the a an he she it they we i you this that these those there then in on at by for
    from after before during when while however but and so although since as its his
    her their our many most some several both each all one two three if yet also
    """
)

_CANDIDATE = re.compile(r"([.!?…]+)[\"'”’)\]]*\s+")
_PARAGRAPH = re.compile(r"\n\s*\n")
_PREV_WORD = re.compile(r"(\S+)$")
_INITIAL_OR_ACRONYM = re.compile(r"(?:[A-Za-z]\.)*[A-Za-z]")
_OPEN_QUOTES = "\"'“‘([«"


def _next_word(text: str, pos: int) -> str:
    end = pos
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[pos:end].strip(_OPEN_QUOTES + ".,;:!?\"'”’)]").lower()


def _is_boundary(text: str, match: re.Match[str]) -> bool:
    nxt = match.end()
    while nxt < len(text) and text[nxt] in _OPEN_QUOTES:
        nxt += 1
    if nxt >= len(text) or not (text[nxt].isupper() or text[nxt].isdigit()):
        return False
    punct = match.group(1)
    if punct != ".":
        return True  # "!", "?", "..." and mixtures always end a sentence here
    prev = _PREV_WORD.search(text, max(0, match.start() - 64), match.start())
    if prev is None:
        return True
    word = prev.group(1).lstrip(_OPEN_QUOTES)
    bare = word.replace(".", "").lower()
    if bare in _ABBREVIATIONS:
        return False
    if bare in _NUMBER_ABBREVIATIONS and text[nxt].isdigit():
        return False
    if _INITIAL_OR_ACRONYM.fullmatch(word):
        return _next_word(text, nxt) in _OPENERS
    return True


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, whitespace collapsed, empty pieces dropped.

    Paragraph breaks (blank lines) always end a sentence.
    """
    out: list[str] = []
    for para in _PARAGRAPH.split(text):
        start = 0
        for m in _CANDIDATE.finditer(para):
            if _is_boundary(para, m):
                out.append(para[start : m.end()])
                start = m.end()
        out.append(para[start:])
    return [s for s in (" ".join(piece.split()) for piece in out) if s]


@lru_cache(maxsize=16384)
def _norm(tok: str) -> str:
    # "10,000" and "10000" are the same number; words are lightly stemmed.
    if tok[0].isdigit():
        return tok.replace(",", "")
    base = stem(tok)
    # stem() strips "es" whole ("temperatures" -> "temperatur") but leaves "temperature"
    # alone; dropping a final "e" makes the two meet.
    return base[:-1] if len(base) > 3 and base.endswith("e") else base


def terms(text: str) -> list[str]:
    """The normalised tokens of ``text`` (stemmed words, comma-free numbers)."""
    return list(_terms(text))


@lru_cache(maxsize=4096)
def _terms(text: str) -> tuple[str, ...]:
    # A page's sentences are ranked once per subclaim and again in the follow-up round.
    return tuple(_norm(t) for t in tokens(text))


@lru_cache(maxsize=1024)
def _query_terms(query: str) -> tuple[str, ...]:
    # A claim's pages are each ranked against the same query: about 30 calls a claim.
    return tuple(dict.fromkeys(_norm(k) for k in keywords(query)))


_K1 = 1.2
_B = 0.75
_NUMBER_WEIGHT = 2.0  # a matching number ("1969", "1.5") is strong evidence of relevance


def rank_sentences(sentences: list[str], query: str, *, lim: int = 5) -> list[RankedSentence]:
    """The ``lim`` sentences that best match ``query``, best first, ties by position.

    Scoring is BM25 over the given sentences (IDF from this set, so a term every sentence
    shares counts little), with numbers weighted double. Every sentence is ranked:
    sentences sharing no term with the query (or all of them, for a query without
    keywords) score 0.0 and follow the matching ones in document order, so a page found
    through its title alone still yields its text.
    """
    if lim <= 0 or not sentences:
        return []
    qterms = _query_terms(query)
    bags = [Counter(_terms(s)) for s in sentences]
    lengths = [sum(b.values()) for b in bags]
    avg = (sum(lengths) / len(lengths)) or 1.0
    n_docs = len(sentences)
    idf: dict[str, float] = {}
    for t in qterms:
        df = sum(1 for b in bags if t in b)
        idf[t] = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    scored: list[tuple[float, int]] = []
    for i, (bag, length) in enumerate(zip(bags, lengths, strict=True)):
        score = 0.0
        norm = _K1 * (1.0 - _B + _B * length / avg)
        for t in qterms:
            tf = bag.get(t, 0)
            if tf:
                weight = _NUMBER_WEIGHT if t[0].isdigit() else 1.0
                score += weight * idf[t] * tf * (_K1 + 1.0) / (tf + norm)
        scored.append((-round(score, 6), i))
    scored.sort()
    return [
        RankedSentence(idx=i, text=sentences[i], score=-neg + 0.0) for neg, i in scored[:lim]
    ]
