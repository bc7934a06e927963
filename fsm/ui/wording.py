"""The engine's terms in plain words, for the inspector's pages and the report: verdict
labels, a sentence's stance, the judge's alignment checks (the doubts it raised), the
envelope's status and rollback. The raw terms stay one click away on the pages (a
"details" toggle); these are what a reviewer reads first."""

from __future__ import annotations

import re

__all__ = [
    "CHECK_WORDS",
    "ICONS",
    "LABEL_WORDS",
    "check_words",
    "reason_words",
    "rollback_words",
    "status_words",
]

#: A verdict or stance label as a reviewer says it.
LABEL_WORDS = {"SUPPORTS": "supports", "REFUTES": "refutes",
               "NOT_ENOUGH_INFO": "not enough info", "DISPUTED": "disputed"}

#: A sign beside each label, so that colour is never the only signal.
ICONS = {"SUPPORTS": "✓", "REFUTES": "✗", "NOT_ENOUGH_INFO": "?", "DISPUTED": "⇄"}

#: Each alignment check (``claimfsm.skills.stance.align.CHECKS``) as a doubt about the claim.
CHECK_WORDS = {
    "number not confirmed": "a number of the claim is not confirmed by the evidence",
    "role swapped": "the evidence has who did what the other way round",
    "quantifier not confirmed": "the evidence does not say the claim's all/only/first",
    "quantifier differs": "the evidence says the opposite all/only/first",
    "entity not mentioned": "a name in the claim is missing from the evidence",
    "argument not mentioned": "who or what the claim is about is missing from the evidence",
    "cause not confirmed": "the evidence does not state the claimed cause",
    "judgment not confirmed": "the evidence states the fact but not the claim's verdict "
                              "on it (exaggerated, a hoax, a myth)",
}

_KEY_TERMS = re.compile(r"key terms (\d+)/(\d+)")
_CONFIDENCE = re.compile(r"^(\S+): (SUPPORTS|REFUTES|NOT_ENOUGH_INFO|DISPUTED) \(([\d.]+)\)")


def check_words(check: str, detail: str) -> str:
    """One doubt of the judge, ``number not confirmed`` + ``1850``, as a sentence."""
    plain = CHECK_WORDS.get(check, check)
    return f"{plain}: {detail}" if detail else plain


def reason_words(reason: str) -> str:
    """A reason of the verdict or a judgment with its shorthand spelt out: ``key terms
    2/3`` -> ``names 2 of the claim's 3 key terms``; ``s1: SUPPORTS (0.62): ...`` ->
    ``part s1 supports (confidence 0.62): ...``."""
    text = _KEY_TERMS.sub(lambda m: f"names {m[1]} of the claim's {m[2]} key terms", reason)
    m = _CONFIDENCE.match(text)
    if m:
        text = (f"part {m[1]} {LABEL_WORDS[m[2]]} (confidence {m[3]})"
                + text[m.end():])
    return text


def status_words(status: str | None, code: str) -> str:
    """The envelope's ``s`` (and error code) as what happened to the step."""
    if not status:
        return "started"
    said = {"ok": "done", "retry": "will retry", "error": "failed"}.get(status, status)
    return f"{said}: {code}" if code else said


def rollback_words(rb: str | None) -> str:
    """The envelope's ``rb`` as what the failed step undid (empty for ``none``)."""
    return {"state": "its changes to the state were undone",
            "tools": "its tool results were undone"}.get(rb or "none", "")
