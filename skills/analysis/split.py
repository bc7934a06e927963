"""Conservative claim splitting: independent facts become subclaims, nothing else does.

Rules, in order (each one explainable from the words alone):

1. **Sentences and semicolons.** A claim is cut after ``.``/``!``/``?`` followed by an
   upper-case word or a digit (not after an abbreviation such as ``U.S.`` or ``Dr.``),
   and at ``;``. A piece without a verb is glued back onto its neighbour.
2. **Coordinated predicates.** Inside a sentence, ``and``/``but`` splits only when the
   left side is a complete clause (a verb followed by at least one content word) and
   the right side is either
   a. a new predicate sharing the subject — ``X was born in 1950 and won the Nobel Prize``
      gives ``X won the Nobel Prize``; a passive auxiliary is carried over when the right
      verb is a participle (``was born in Paris and raised in Rome`` -> ``X was raised
      in Rome``), or
   b. a new clause with its own short subject (``Paris is in France and Berlin is in
      Germany``).
   So noun coordination (``salt and pepper``), one predicate with two objects
   (``won the Nobel Prize and the Copley Medal``) and shared participles (``was designed
   and built by``) stay whole.
3. **Pronoun subjects** (``he``, ``she``, ``it``, ``they``) of a split-off clause are
   replaced by the subject they refer back to.
"""

from __future__ import annotations

import re

from claimfsm.skills.analysis.lexicon import (
    AUXILIARIES,
    DETERMINERS,
    SUBJECT_PRONOUNS,
    is_finite_verb,
    is_regular_past,
    word_set,
)
from claimfsm.skills.analysis.text import STOPWORDS

__all__ = ["split_claim"]

_BOUNDARY = re.compile(r"(?<=[.!?;])\s+")
_ABBREVIATIONS = word_set(
    """
    mr mrs ms dr st jr sr inc ltd co corp vs etc no mt ft gen gov sen rep prof jan feb mar
    apr jun jul aug sep sept oct nov dec approx e.g i.e al
    """
)
_COORDINATORS = frozenset({"and", "but"})
_PASSIVE_AUX = frozenset({"is", "are", "was", "were"})
# Participles that only follow an auxiliary ("written", never "he written").
_PARTICIPLES = word_set(
    """
    written taken given seen known grown driven chosen broken eaten drawn spoken begun sung
    gone beaten born stolen shown sworn torn worn hidden forgotten frozen
    """
)
# Regular -ed verbs that are intransitive: "and died in 2000" never takes "was".
_INTRANSITIVE_ED = word_set(
    """
    died lived arrived retired returned moved emigrated immigrated resigned served worked
    played stayed remained graduated happened occurred existed appeared disappeared
    travelled traveled landed started ended competed survived belonged
    """
)
_STRIP = ".,;:!?\"'“”‘’()[]{}"
_TRAILING = ".,;:!? "


def _bare(tok: str) -> str:
    return tok.strip(_STRIP).lower()


def _is_sentence_end(text: str, pos: int) -> bool:
    """Whether the punctuation right before ``pos`` (a boundary) ends a sentence."""
    mark = text[pos - 1]
    if mark == ";":
        return True
    nxt = text[pos : pos + 1]
    if not (nxt.isupper() or nxt.isdigit() or nxt in "\"“'‘"):
        return False
    if mark != ".":
        return True
    word = text[:pos].rstrip().rsplit(" ", 1)[-1].rstrip(".").lstrip(_STRIP).lower()
    # "U.S.", "J.", "Dr.": a dot inside a short word is an abbreviation, not an end.
    return not (word in _ABBREVIATIONS or "." in word or (len(word) == 1 and word.isalpha()))


def _sentences(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        if _is_sentence_end(text, m.end()):
            pieces.append(text[start : m.start()])
            start = m.end()
    pieces.append(text[start:])
    groups: list[str] = []
    for piece in pieces:
        if groups and (_verb_index(piece.split()) is None or _verb_index(groups[-1].split())
                       is None):
            groups[-1] = f"{groups[-1]} {piece}"
        else:
            groups.append(piece)
    return groups


def _verb_index(toks: list[str]) -> int | None:
    for i, tok in enumerate(toks):
        prev = _bare(toks[i - 1]) if i else None
        if is_finite_verb(_bare(tok), prev):
            return i
    return None


def _verb_group_end(toks: list[str], v: int) -> int:
    j = v + 1
    while j < len(toks):
        low = _bare(toks[j])
        if low in AUXILIARIES or low in _PARTICIPLES or is_regular_past(low) or low in (
            "not", "also", "never", "been", "being"
        ):
            j += 1
        else:
            break
    return j


def _complete_clause(toks: list[str]) -> bool:
    """A verb followed by at least one content word: ``was born in 1950``."""
    v = _verb_index(toks)
    if v is None:
        return False
    rest = toks[_verb_group_end(toks, v) :]
    return any(_bare(t) and _bare(t) not in STOPWORDS for t in rest)


def _own_subject(toks: list[str]) -> int | None:
    """Index of the verb when ``toks`` starts with a short subject of its own."""
    v = _verb_index(toks)
    if v is None or not 1 <= v <= 4:
        return None
    allowed = DETERMINERS | SUBJECT_PRONOUNS
    if any(_bare(t) in STOPWORDS and _bare(t) not in allowed for t in toks[:v]):
        return None
    return v


def _carry_aux(left: list[str], right_verb: str) -> str | None:
    """The passive auxiliary to repeat before a coordinated participle, if any."""
    v = _verb_index(left)
    if v is None or _bare(left[v]) not in _PASSIVE_AUX or _verb_group_end(left, v) < v + 2:
        return None
    low = _bare(right_verb)
    if low in _PARTICIPLES or (is_regular_past(low) and low not in _INTRANSITIVE_ED):
        return left[v]
    return None


def _resolve(subject: list[str], clause: list[str], v: int) -> list[str]:
    if v == 1 and _bare(clause[0]) in SUBJECT_PRONOUNS and subject:
        return [*subject, *clause[1:]]
    return clause


def _split_sentence(sentence: str, prev_subject: list[str]) -> tuple[list[str], list[str]]:
    """Clauses of one sentence and the subject they share."""
    toks = sentence.split()
    v0 = _verb_index(toks)
    subject = toks[:v0] if v0 else []
    if v0 == 1 and _bare(toks[0]) in SUBJECT_PRONOUNS and prev_subject:
        subject = prev_subject
        toks = [*prev_subject, *toks[1:]]
    clauses: list[list[str]] = []
    start = 0
    k = 0
    while k < len(toks):
        # Slice only at coordinators: slicing at every token made long claims quadratic.
        if _bare(toks[k]) not in _COORDINATORS:
            k += 1
            continue
        left, right = toks[start:k], toks[k + 1 :]
        if left and right and _complete_clause(left):
            if subject and is_finite_verb(_bare(right[0]), None):
                aux = _carry_aux(left, right[0])
                clauses.append(left)
                toks = [*toks[: k + 1], *subject, *([aux] if aux else []), *right]
                start = k + 1
            elif (own := _own_subject(right)) is not None:
                clauses.append(left)
                toks = [*toks[: k + 1], *_resolve(subject, right, own)]
                start = k + 1
        k += 1
    clauses.append(toks[start:])
    return [" ".join(c) for c in clauses], subject


def split_claim(claim: str) -> list[str]:
    """Subclaim texts of ``claim`` (see the module docstring); ``[]`` if it has no words.

    An unsplit claim comes back whitespace-normalised but otherwise as written; split
    parts lose their trailing punctuation.
    """
    text = " ".join(claim.split())
    if not any(c.isalnum() for c in text):
        return []
    parts: list[str] = []
    subject: list[str] = []
    for sentence in _sentences(text):
        clauses, subj = _split_sentence(sentence, subject)
        if subj and _bare(subj[0]) not in SUBJECT_PRONOUNS:
            subject = subj
        parts.extend(clauses)
    parts = [p for p in parts if any(c.isalnum() for c in p)]
    if len(parts) == 1:
        return [text]
    return [p.rstrip(_TRAILING).rstrip() for p in parts]
