"""Numbers in claims and sentences: what kind of quantity, and do they agree?

A year in the claim against a different year in the sentence is a clash; a count
against another count clashes only when both count the same thing, i.e. the words right
after the two numbers overlap ("3 astronauts" vs "two astronauts",
not "3 astronauts" vs "5 students"). Two values agree when they are within the tolerance;
a claim number written round (ending in a zero: "360", "8,800") must moreover be the
sentence's value rounded to that digit, or the other way round ("8,800" and "8,850"
confirm 8,849, "360" does not confirm 365.25; "195" keeps the plain tolerance for 196).
A number right after a name is part of the name ("Apollo 13") and is matched with it,
not as a quantity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from claimfsm.skills.analysis.text import STOPWORDS, words
from claimfsm.skills.stance.lexicon import is_month, is_name, term

__all__ = ["NUMBER_WORDS", "UNITS", "Num", "NumberCheck", "compare_numbers", "find_numbers"]

_NUM = re.compile(
    r"(?<![A-Za-z0-9.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(s\b)?(\s*(?:%|percent\b|per cent\b))?"
)
NUMBER_WORDS: dict[str, int] = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "dozen": 12,
}
"""Number words read as numbers ("one" is left out: it is mostly a pronoun)."""


UNITS: frozenset[str] = frozenset(term(w) for w in """
second seconds minute minutes hour hours day days week weeks month months year years
degree degrees celsius fahrenheit kelvin metre metres meter meters kilometre kilometres
kilometer kilometers km mile miles foot feet inch inches kilogram kilograms kg gram grams
tonne tonnes ton tons pound pounds litre litres liter liters percent ppm
""".split())
"""Units of measure: two numbers counting different units never confirm each other."""


@dataclass(frozen=True)
class Num:
    """A number as written, its value, its kind (year, decade, day, pct, num, or name
    as in "Apollo 13") and the terms right after it (what it counts)."""

    text: str
    value: float
    kind: str
    context: frozenset[str]


@dataclass(frozen=True)
class NumberCheck:
    """Claim numbers the sentence repeats, contradicts (claim, sentence), or leaves out."""

    agree: tuple[str, ...]
    clash: tuple[tuple[str, str], ...]
    unconfirmed: tuple[str, ...]


# How far around a number its neighbours are looked for. Bounded windows keep the scan of
# a text linear in its length, however many numbers it holds (a slice to the text's end
# per number made one long document cost seconds).
_WINDOW = 160


def _context(text: str, end: int) -> frozenset[str]:
    # What a number counts is named right after it: "3 astronauts", "97% of scientists".
    after = [w for w in words(text[end:end + _WINDOW]) if w.lower() not in STOPWORDS][:2]
    return frozenset(term(w) for w in after if not w[0].isdigit())


def _name_before(before: str) -> str | None:
    # The word joined to a number by one space or hyphen ("Apollo 13", "Boeing-747").
    if not before or before[-1] not in " -":
        return None
    head = before[:-1]
    start = len(head)
    while start > 0 and head[start - 1].isascii() and head[start - 1].isalpha():
        start -= 1
    return head[start:] or None


def find_numbers(text: str) -> tuple[Num, ...]:
    """Numbers in ``text`` (digits and a few number words) with kind and context."""
    out: list[Num] = []
    for m in _NUM.finditer(text):
        raw, decade, pct = m.group(1), m.group(2), m.group(3)
        value = float(raw.replace(",", ""))
        before = text[max(0, m.start() - _WINDOW): m.start()]
        prev = words(before)[-1:]
        nxt = words(text[m.end(): m.end() + _WINDOW])[:1]
        named = _name_before(before)
        if not pct and not decade and raw.isdigit() and named and is_name(named):
            kind = "name"
        elif pct:
            kind = "pct"
        elif decade and value.is_integer() and 1000 <= value <= 2100 and value % 10 == 0:
            kind = "decade"
        elif "." not in raw and "," not in raw and len(raw) == 4 and 1000 <= value <= 2100:
            kind = "year"
        elif value <= 31 and any(is_month(w) for w in prev + nxt):
            kind = "day"
        else:
            kind = "num"
        shown = raw + (decade or "") + ("%" if pct else "")
        out.append(Num(shown, value, kind, _context(text, m.end())))
    for m in re.finditer(r"[A-Za-z]+", text):
        if m.group().lower() in NUMBER_WORDS:
            value = float(NUMBER_WORDS[m.group().lower()])
            out.append(Num(m.group(), value, "num", _context(text, m.end())))
    return tuple(out)


def _same_quantity(c: Num, s: Num) -> bool:
    times = {"year", "decade"}
    if c.kind in times and s.kind in times:
        return True
    return c.kind == s.kind and (c.kind == "day" or bool(c.context & s.context))


def _agrees(c: Num, s: Num, tol: float) -> bool:
    if c.kind == "year" and s.kind == "decade":
        return s.value <= c.value < s.value + 10
    if c.kind == "decade" and s.kind == "year":
        return c.value <= s.value < c.value + 10
    if {c.kind, s.kind} & {"year", "decade"}:
        return c.kind == s.kind and c.value == s.value
    cu, su = c.context & UNITS, s.context & UNITS
    if cu and su and not cu & su:
        return False  # "360 days" is not confirmed by "360 degrees"
    if abs(c.value - s.value) > tol * max(abs(c.value), abs(s.value)):
        return False
    # A claim number written round ("360", "8,800") says the value rounded to that
    # digit: within tolerance, it must also be the sentence's value so rounded ("8,800"
    # for 8,849 agrees, "360" for 365.25 does not). "195" for 196 keeps the tolerance.
    return _precision(c) < 10 or _rounds_to(s.value, c) or _rounds_to(c.value, s)


def _precision(n: Num) -> float:
    digits = n.text.rstrip("s%").replace(",", "")
    if not digits.replace(".", "", 1).isdigit():
        return 1.0  # a number word ("two") is exact
    if "." in digits:
        return 10.0 ** -len(digits.split(".")[1])
    return 10.0 ** (len(digits) - len(digits.rstrip("0")))


def _rounds_to(value: float, n: Num) -> bool:
    # Half a unit of the last written digit, plus a hair for float error.
    return abs(value - n.value) <= _precision(n) / 2 * (1 + 1e-9)


def compare_numbers(claim: Sequence[Num], sent: Sequence[Num], tol: float) -> NumberCheck:
    """Each claim number: repeated (agree), replaced by another of the same quantity
    (clash), or absent (unconfirmed)."""
    agree: list[str] = []
    clash: list[tuple[str, str]] = []
    unconfirmed: list[str] = []
    sent = [s for s in sent if s.kind != "name"]
    for c in claim:
        if c.kind == "name":
            continue  # part of a name: matched with the name, not as a quantity
        if any(_agrees(c, s, tol) for s in sent):
            agree.append(c.text)
            continue
        rival = next((s for s in sent if _same_quantity(c, s)), None)
        if rival is None:
            unconfirmed.append(c.text)
        else:
            clash.append((c.text, rival.text))
    return NumberCheck(tuple(agree), tuple(clash), tuple(unconfirmed))
