"""Alignment checks: does the sentence put the claim's things in the same roles?

Key-term overlap says a sentence is *about* the claim; these checks say whether it
states the same fact. Each returns a :class:`Check` whose ``name`` is one of
:data:`CHECKS`; a check either **blocks** support (the sentence cannot be SUPPORTS, it
is NOT_ENOUGH_INFO) or **refutes** (the sentence states the opposite). The judge shows a
check as one reason, ``"<name>: <detail>"`` (``role swapped: 'Armstrong' is not who
'stayed' (the sentence has 'Michael Collins')``, ``number not confirmed: 1850``), and
AGGREGATE repeats the deciding one for the claim (docs/judge.md, "Alignment checks").

- **role swapped** (:func:`role_check`): a predicate of the claim recurs in the sentence
  (same verb, or both of the cause/harm family :data:`~claimfsm.skills.stance.roles.INFLUENCE`)
  with the claim's agent on the patient side and its patient on the agent side
  (refutes when the verb is the same, else blocks), or with the claim's patient but
  another agent while the claim's agent stands elsewhere in the sentence (blocks). A
  sentence where some occurrence keeps both roles passes.
- **quantifier not confirmed** / **quantifier differs** (:func:`quantifier_check`): a claim
  saying all, every, always, never, only, first or last needs the sentence to say it too;
  the opposite (all / none, always / never, first / last) refutes, a weaker one (some,
  most, often, one of) blocks.
- **entity not mentioned** (:func:`entity_check`): a name of the claim (an entity span of
  :func:`claimfsm.skills.analysis.terms.analyse`, or an alias: ``CO2`` / carbon dioxide)
  no word of which any sentence a SUPPORTS verdict rests on mentions, nor their
  documents' titles; the speaker of a claim ("Dr Soon says ...") and dates are not
  entities of its fact. VERIFY applies it to the supporting sentences together.
- **cause not confirmed** / **role swapped** (:mod:`claimfsm.skills.stance.causal`): a claim
  that X causes Y (causes, leads to, drives, because, due to, is what ...) needs a
  sentence stating that link the same way round.
- **argument not mentioned** (:func:`argument_check`): the agent of the claim's first
  predicate (who or what acts) has none of its key words in the supporting
  sentences together, nor in their documents' titles.
- **number not confirmed** is decided by :func:`claimfsm.skills.stance.numbers.compare_numbers`
  (the judge blocks support on any unconfirmed number; see there for tolerance and units).

Every check is a pass over the tokens of the two texts (frames are found per clause),
so the cost stays linear in their length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from claimfsm.skills.analysis.terms import analyse
from claimfsm.skills.analysis.text import STOPWORDS
from claimfsm.skills.stance.causal import causal_check
from claimfsm.skills.stance.features import Analysis, Token, analyze, claim_terms, close
from claimfsm.skills.stance.lexicon import EXCLUSIVE, ORDINALS, is_month, term
from claimfsm.skills.stance.roles import Frame, frames

__all__ = [
    "CHECKS",
    "Check",
    "align",
    "argument_check",
    "entity_check",
    "quantifier_check",
    "role_check",
    "together",
]

CHECKS: tuple[str, ...] = (
    "role swapped", "number not confirmed", "quantifier not confirmed",
    "quantifier differs", "entity not mentioned", "argument not mentioned",
    "cause not confirmed",
)
"""The names of the alignment checks, as they start a reason (a stable vocabulary)."""


@dataclass(frozen=True)
class Check:
    """One failed check: its name (of :data:`CHECKS`), what it found, and whether the
    sentence refutes the claim (else it only blocks support)."""

    name: str
    detail: str
    refutes: bool = False

    @property
    def reason(self) -> str:
        """``"<name>: <detail>"``, the form reasons carry."""
        return f"{self.name}: {self.detail}"


def _hits(terms: Sequence[str], side: Sequence[Token]) -> list[str]:
    return [t for t in terms if any(close(t, tok.term) for tok in side)]


def _terms(side: Sequence[Token], key: frozenset[str]) -> list[str]:
    return list(dict.fromkeys(t.term for t in side if t.term in key))


def _words(side: Sequence[Token], terms: Sequence[str]) -> str:
    return " ".join(t.word for t in side if t.term in terms)


def _same(cf: Frame, sf: Frame) -> bool:
    return close(cf.pred, sf.pred) or (cf.influence and sf.influence)


def _frame_check(cf: Frame, sfs: Sequence[Frame], key: frozenset[str],
                 sentence_terms: frozenset[str]) -> Check | None:
    agent, patient = _terms(cf.agent, key), _terms(cf.patient, key)
    if not agent or not patient:
        return None
    swapped: Check | None = None
    moved: Check | None = None
    for sf in (f for f in sfs if _same(cf, f)):
        a_a, a_p = _hits(agent, sf.agent), _hits(agent, sf.patient)
        p_p, p_a = _hits(patient, sf.patient), _hits(patient, sf.agent)
        if a_a and p_p:
            return None  # some occurrence keeps the claim's roles
        if a_p and p_a and not p_p and swapped is None:
            explicit = close(cf.pred, sf.pred)
            swapped = Check("role swapped",
                            f"claim '{_words(cf.agent, agent)} {cf.word} "
                            f"{_words(cf.patient, patient)}', sentence '"
                            f"{_words(sf.agent, p_a)} {sf.word} {_words(sf.patient, a_p)}'",
                            refutes=explicit)
        elif a_a and not p_p and sf.patient and moved is None and any(
                any(close(q, s) for s in sentence_terms) for q in patient):
            others = " ".join(t.word for t in sf.patient if not any(close(t.term, q)
                                                                     for q in patient))
            moved = Check("role swapped", f"'{_words(cf.patient, patient)}' is not what "
                          f"'{sf.word}' takes (the sentence has '{others}')")
        elif p_p and not a_a and sf.agent and moved is None and any(
                any(close(a, s) for s in sentence_terms) for a in agent):
            others = " ".join(t.word for t in sf.agent if not any(close(t.term, a)
                                                                   for a in agent))
            moved = Check("role swapped", f"'{_words(cf.agent, agent)}' is not who "
                          f"'{sf.word}' (the sentence has '{others}')")
    return swapped or moved


def role_check(claim: Analysis, sent: Analysis, key: frozenset[str]) -> Check | None:
    """``role swapped`` for the first claim predicate whose roles the sentence swaps
    (``key``: the claim's key terms, the only words that count on either side)."""
    sfs = frames(sent)
    if not sfs:
        return None
    sentence_terms = sent.terms
    for cf in frames(claim):
        found = _frame_check(cf, sfs, key, sentence_terms)
        if found is not None:
            return found
    return None


# Each claim quantifier: the words that confirm it, and those that state the opposite.
_SAME: dict[str, frozenset[str]] = {
    "all": frozenset({"all", "every", "each", "entire", "whole", "always"}),
    "every": frozenset({"all", "every", "each", "always"}),
    "always": frozenset({"always", "every", "all", "invariably"}),
    "never": frozenset({"never", "not", "no", "none", "nothing", "nobody", "cannot"}),
    "only": frozenset({"only", "sole", "solely", "alone", "exclusively"}),
    "first": frozenset({"first", "earliest"}),
    "last": frozenset({"last", "final", "latest"}),
}
_OPPOSITE: dict[str, frozenset[str]] = {
    "all": frozenset({"none", "no"}),
    "every": frozenset({"none", "no"}),
    "always": frozenset({"never"}),
    "never": frozenset({"always"}),
    "first": frozenset({"last", "second", "third", "later"}),
    "last": frozenset({"first"}),
}
_IDIOM_BEFORE = frozenset({"in", "at", "above", "after", "for"})
_WEAKER: frozenset[str] = frozenset(
    {"some", "most", "many", "few", "several", "often", "sometimes", "usually", "partly",
     "mostly", "also", "among", "rarely", "occasionally"})


def quantifier_check(claim: Analysis, sent: Analysis) -> Check | None:
    """``quantifier differs`` / ``quantifier not confirmed`` for the claim's first
    quantifier the sentence does not repeat (see the module doc)."""
    said = {t.low for t in sent.tokens} | {"not" for t in sent.tokens if t.low.endswith("n't")}
    for n, tok in enumerate(claim.tokens):
        if n and claim.tokens[n - 1].low in _IDIOM_BEFORE and tok.low == "all":
            continue  # "in all", "at all", "above all": no claim about every member
        same = _SAME.get(tok.low)
        if same is None or same & said:
            continue
        opposite = _OPPOSITE.get(tok.low, frozenset()) & said
        if opposite:
            return Check("quantifier differs", f"claim '{tok.word}' vs sentence "
                         f"'{min(opposite)}'", refutes=True)
        weaker = _WEAKER & said
        if weaker:
            return Check("quantifier differs", f"claim '{tok.word}' vs sentence "
                         f"'{min(weaker)}'")
        return Check("quantifier not confirmed", f"'{tok.word}'")
    return _exclusive_check(claim, sent, said)


_PLURAL = frozenset({"several", "many", "among", "some", "multiple"})
_EXCLUSIVE_WORDS = frozenset({"only", "sole"})


def _exclusive_check(claim: Analysis, sent: Analysis, said: set[str]) -> Check | None:
    # The sentence makes something unique that the claim makes one of many ("the only
    # natural satellite" / "one of several"), or ranks it below where the claim puts it
    # ("the second highest" / "the highest").
    claimed = {t.low for t in claim.tokens}
    plural = _PLURAL & claimed
    if plural and _EXCLUSIVE_WORDS & said and not _EXCLUSIVE_WORDS & claimed:
        return Check("quantifier differs", f"claim '{min(plural)}' vs sentence "
                     f"'{min(_EXCLUSIVE_WORDS & said)}'", refutes=True)
    toks = sent.tokens
    names = [t.term for t in claim.tokens[1:] if t.word[:1].isupper()]
    if not all(any(close(n, s) for s in sent.terms) for n in names):
        return None  # a rank of something else ("K2 is the second highest")
    for n, tok in enumerate(toks):
        if n and toks[n - 1].low in ORDINALS and tok.term in EXCLUSIVE:
            if tok.term in claim.terms and not ORDINALS & claimed:
                return Check("quantifier differs", f"claim '{tok.word}' vs sentence "
                             f"'{toks[n - 1].word} {tok.word}'", refutes=True)
    return None


# Names a text may give in another form: an entity is mentioned by any of these words.
_ALIASES: dict[str, tuple[str, ...]] = {
    "co2": ("carbon", "dioxide"), "ch4": ("methane",), "u.s": ("united", "states", "america"),
    "us": ("united", "states", "america"), "usa": ("united", "states", "america"),
    "uk": ("united", "kingdom", "britain", "british"), "earth": ("planet", "world", "global"),
    "moon": ("lunar",), "sun": ("solar",),
}
# Words that report who said something: the speaker of a claim is not part of its fact.
_REPORTING = frozenset({"say", "says", "said", "claim", "claims", "claimed", "argue",
                        "argues", "argued", "wrote", "writes", "told"})
_GENERIC_HEADS = frozenset({
    "sea", "ocean", "river", "lake", "crater", "mount", "mountain", "island", "islands",
    "city", "state", "states", "space", "agency", "university", "telescope", "station",
    "union", "territory", "protocol", "war", "world", "national", "international",
    "north", "south", "east", "west", "the", "dr", "mr", "mrs", "ms", "prof",
})
_CALENDAR = frozenset({"monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                       "sunday"})


@lru_cache(maxsize=4096)
def _entities(claim: str) -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
    toks = analyse(claim).toks
    out = []
    for start, end in analyse(claim).spans:
        # A capital at the claim's start may be an ordinary word ("Aboard Vostok 1").
        first = start + 1 if start == 0 and end - start > 1 else start
        words = [t.text.removesuffix("'s") for t in toks[first:end]]
        words = [w for w in words if w.lower() not in STOPWORDS and len(w) > 1]
        speaker = (end < len(toks) and toks[end].lower in _REPORTING) or (
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
            wanted = _terms(side, key)
            if wanted and not any(any(close(p, s) for s in have for p in (w, *w.split()))
                                  for w in wanted):
                return Check("argument not mentioned", f"'{_words(side, wanted)}' "
                             f"('{cf.word}')")
    return None


def align(claim: str, ca: Analysis, sa: Analysis, key: frozenset[str],
          context: frozenset[str] = frozenset()) -> tuple[Check, ...]:
    """Every failed alignment check of the sentence ``sa`` against the claim (``ca``, and
    its text), refuting ones first. ``context``: the terms of the sentence's document
    title, which name what the sentence is about ("It was completed in 1889" in the
    article "Eiffel Tower"). The entity check is not among them: it reads every sentence
    a verdict cites together, and so does the argument check (:func:`together`)."""
    del context  # names are checked over a verdict's sentences together (together())
    causal = causal_check(ca, sa, key)
    found = [c for c in (role_check(ca, sa, key), quantifier_check(ca, sa),
                         Check(*causal) if causal else None) if c is not None]
    return tuple(sorted(found, key=lambda c: not c.refutes))


def together(claim: str, texts: Sequence[tuple[str, frozenset[str]]]) -> Check | None:
    """The entity and argument checks over several sentences at once: ``texts`` holds
    each supporting sentence with its title terms; every entity and both sides of the
    claim's first predicate must be named somewhere among them. A sentence opening with
    a pronoun ("Their work relied on ...") may name the claim's subject that way: the
    names before the claim's first predicate then need no mention."""
    found = [analyze(text) for text, _ in texts]
    terms = frozenset().union(*(a.terms | title for a, (_, title) in zip(found, texts,
                                                                        strict=True)))
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
