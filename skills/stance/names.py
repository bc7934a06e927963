"""Names and arguments: a claim is supported only by sentences that name what it is about.

Two checks of :mod:`claimfsm.skills.stance.align`'s vocabulary, read over every sentence a
SUPPORTS verdict rests on together (:func:`together`, which VERIFY applies), since one
sentence may name the person and the next the place:

- **entity not mentioned** (:func:`entity_check`): a name of the claim (an entity span of
  :func:`claimfsm.skills.analysis.terms.analyse`) one of whose distinctive words (not a
  generic head such as Sea or Crater) no sentence names, by itself or an alias (``CO2`` /
  carbon dioxide, Moon / lunar), nor their documents' titles. The speaker of a claim
  ("Dr Soon says ...") and dates are not entities of its fact; a capital at the claim's
  start may be an ordinary word.
- **argument not mentioned** (:func:`argument_check`): the agent of the claim's first
  predicate (who or what acts) has none of its key words there.

A sentence opening with a pronoun ("Their work relied on ...") may name the claim's
subject that way: the words before the claim's first predicate then need no mention.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from claimfsm.skills.analysis.terms import Tok, analyse
from claimfsm.skills.analysis.text import STOPWORDS
from claimfsm.skills.stance.align import Check, _terms, _words
from claimfsm.skills.stance.features import Analysis, analyze, claim_terms, close
from claimfsm.skills.stance.lexicon import is_month, term
from claimfsm.skills.stance.roles import frames

__all__ = ["acronyms", "argument_check", "entity_check", "initials", "together"]


# Names a text may give in another form: an entity is mentioned by any of these words.
_ALIASES: dict[str, tuple[str, ...]] = {
    # A hypernym names them too: a sentence on greenhouse gases is about CO2 and methane.
    "co2": ("carbon", "dioxide", "greenhouse"), "ch4": ("methane", "greenhouse"),
    "u.s": ("united", "states", "america"),
    "us": ("united", "states", "america"), "usa": ("united", "states", "america"),
    "uk": ("united", "kingdom", "britain", "british"), "earth": ("planet", "world", "global"),
    "moon": ("lunar",), "sun": ("solar",),
}
# Words that report who said something: the speaker of a claim is not part of its fact.
_REPORTING = frozenset({"say", "says", "said", "claim", "claims", "claimed", "argue",
                        "argues", "argued", "wrote", "writes", "told", "find", "finds",
                        "found", "report", "reports", "reported", "notes", "noted",
                        "believes", "warns", "warned", "suggests", "concludes"})
_GENERIC_HEADS = frozenset({
    "sea", "ocean", "river", "lake", "crater", "mount", "mountain", "island", "islands",
    "city", "state", "states", "space", "agency", "university", "telescope", "station",
    "union", "territory", "protocol", "war", "world", "national", "international",
    "north", "south", "east", "west", "the", "dr", "mr", "mrs", "ms", "prof",
})
# Agents that report or measure rather than act in the fact ("Scientists have published
# evidence that ...", "Studies show ..."): a sentence stating the fact needs not name them.
_GENERIC_AGENTS = frozenset(term(w) for w in """
scientist scientists researcher researchers study studies expert experts evidence data
research team report observation observations measurement measurements analysis
""".split())
_CALENDAR = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                       "sunday"})


def _acronym(word: str) -> bool:
    return word.isupper() or any(c.isdigit() for c in word)


def _headline(toks: Sequence[Tok]) -> bool:
    """A claim in title case ("Discovery Of Massive Volcanic CO2 Emissions ..."): its
    capitals mark a headline's style, not names."""
    words = [t.text for t in toks if t.text[:1].isalpha() and len(t.text) > 3]
    # Names capitalise their own words only; a title also capitalises small words ("Of").
    small = any(t.text[:1].isupper() and t.lower in STOPWORDS for t in toks[1:])
    return small and len(words) >= 4 and sum(w[:1].isupper() for w in words) >= 0.8 * len(
        words)


@lru_cache(maxsize=4096)
def _entities(claim: str) -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
    toks = analyse(claim).toks
    headline = _headline(toks)
    out = []
    for start, end in analyse(claim).spans:
        # A capital at the claim's start may be an ordinary word ("Aboard Vostok 1").
        first = start + 1 if start == 0 and end - start > 1 else start
        words = [t.text.removesuffix("'s") for t in toks[first:end]]
        words = [w for w in words if w.lower() not in STOPWORDS and len(w) > 1
                 and (not headline or _acronym(w))]
        # "Murry Salby finds ...", "[Jonathan Overpeck:] ...", "according to NASA".
        speaker = (end < len(toks) and (toks[end].lower in _REPORTING
                                        or ":" in toks[end].gap)) or (
            start > 1 and toks[start - 2].lower == "according")
        if not words or speaker or all(is_month(w) or w.lower() in _CALENDAR for w in words):
            continue
        distinct = [w for w in words if w.lower() not in _GENERIC_HEADS]
        # Every distinctive word must be named ("Red Sea" is not "Dead Sea"), each by
        # itself or an alias; generic heads (Sea, Crater) alone do not tell names apart,
        # and a name of generic words only needs one of them.
        forms = [(w, *_ALIASES.get(w.lower(), ())) for w in (distinct or words)]
        parts = (tuple(tuple(term(x) for x in f) for f in forms) if distinct
                 else (tuple(term(x) for f in forms for x in f),))
        if parts:
            out.append((" ".join(words), parts))
    return tuple(out)


def entity_check(claim: str, sent: Analysis,
                 context: frozenset[str] = frozenset()) -> Check | None:
    """``entity not mentioned`` for the claim's first name no word of which the sentence
    (or its document's title, the terms ``context``) has (``"Neil Armstrong"`` is
    mentioned by ``"Armstrong"``)."""
    have = sent.terms | context
    have |= frozenset(w for t in have if " " in t for w in t.split())  # "vostok 1"
    for text, parts in _entities(claim):
        if not all(any(close(p, s) for s in have for p in forms) for forms in parts):
            return Check("entity not mentioned", f"'{text}'")
    return None


def argument_check(claim: Analysis, sent: Analysis, key: frozenset[str],
                   context: frozenset[str] = frozenset()) -> Check | None:
    """``argument not mentioned`` when the sentence has no key word of the agent side
    (who or what acts) of the claim's first predicate: "Polar bears cause the loss of sea ice"
    is not about a sentence on sea ice alone. ``context``: as for :func:`entity_check`."""
    have = sent.terms | context
    for cf in frames(claim)[:1]:
        for side in (cf.agent,):
            wanted = [w for w in _terms(side, key) if w not in _GENERIC_AGENTS]
            if wanted and not any(any(close(p, s) for s in have for p in (w, *w.split()))
                                  for w in wanted):
                return Check("argument not mentioned", f"'{_words(side, wanted)}' "
                             f"('{cf.word}')")
    return None


_LINKS = frozenset({"of", "on", "and", "for", "the", "&"})


@lru_cache(maxsize=4096)
def acronyms(claim: str) -> frozenset[str]:
    """The terms of the claim's acronyms (IPCC, UN, NOAA)."""
    return frozenset(term(t.lower) for t in analyse(claim).toks
                     if len(t.text) > 1 and t.text.isupper() and t.text.isalpha())


def initials(text: str, wanted: frozenset[str]) -> frozenset[str]:
    """The acronyms of ``wanted`` (terms) that a text spells out: the initials of a run of
    capitalised words, small linking words skipped ("Intergovernmental Panel on Climate
    Change" -> IPCC, "United Nations" -> UN), so a claim's acronym is mentioned by its
    full name."""
    if not wanted:
        return frozenset()
    out: set[str] = set()
    run: list[str] = []
    for word in [*text.replace("-", " ").split(), "."]:
        bare = word.strip(".,;:()[]\"'’‘“”")
        if bare[:1].isupper() and bare.isalpha():
            run.append(bare[0].lower())
            # Every stretch of the run ending here: "The Medieval Warm Period" spells MWP.
            out.update(term("".join(run[k:])) for k in range(max(0, len(run) - 6),
                                                              len(run) - 1))
        elif bare.lower() not in _LINKS or not run:
            run = []
    return frozenset(out) & wanted


def together(claim: str, texts: Sequence[tuple[str, frozenset[str]]]) -> Check | None:
    """The entity and argument checks over several sentences at once: ``texts`` holds
    each supporting sentence with its title terms; every entity and both sides of the
    claim's first predicate must be named somewhere among them. A sentence opening with
    a pronoun ("Their work relied on ...") may name the claim's subject that way: the
    names before the claim's first predicate then need no mention."""
    found = [analyze(text) for text, _ in texts]
    wanted = acronyms(claim)
    terms = frozenset().union(*(a.terms | title | initials(text, wanted)
                                for a, (text, title) in zip(found, texts, strict=True)))
    ca = analyze(claim)
    first = frames(ca)[:1]
    if first and any(a.tokens and a.tokens[0].low in _PRONOUNS for a in found):
        at = next((n for n, t in enumerate(ca.tokens) if t.word == first[0].word), 0)
        terms |= frozenset(t.term for t in ca.tokens[:at])
    empty = Analysis(tokens=(), numbers=())
    key = frozenset(t.term for t in claim_terms(ca))
    return entity_check(claim, empty, terms) or argument_check(ca, empty, key, terms)


_PRONOUNS = frozenset({"it", "its", "they", "their", "he", "his", "she", "her", "this",
                       "these", "those"})
