"""Input limits of the skills, as data: every size a skill accepts, checked at the
boundary (a skill's input model, ``Driver.start``, ``claimfsm skill``), refused with
``INPUT_TOO_LARGE`` naming the field and the limit. docs/limits.md lists them.

The limits keep every skill's work bounded: the text algorithms are linear, so an input
under these limits finishes in well under two seconds; one over them is refused after
reading at most the limit.
"""

from __future__ import annotations

from claimfsm.skills.envelope import Envelope

__all__ = [
    "MAX_CLAIM_CHARS",
    "MAX_DOC_BYTES",
    "MAX_EVIDENCE_PER_CLAIM",
    "MAX_INPUT_BYTES",
    "MAX_INT",
    "MAX_LIST",
    "MAX_SENTENCE_CHARS",
    "MAX_SUBCLAIMS",
    "MAX_TOOL_RESULT_BYTES",
    "too_large",
]

MAX_CLAIM_CHARS = 1_000
"""A claim (and each subclaim), in characters. Real claims are a sentence or two."""

MAX_SUBCLAIMS = 16
"""Subclaims one claim may split into; each costs a retrieval round."""

MAX_SENTENCE_CHARS = 20_000
"""One evidence sentence or tool text handed to a skill, in characters."""

MAX_EVIDENCE_PER_CLAIM = 200
"""Evidence sentences per subclaim given to the judge."""

MAX_LIST = 1_000
"""Any other list in a skill's input (plans, requests, hits, facts, judgments)."""

MAX_INPUT_BYTES = 512 * 1024
"""A skill's raw JSON input (``claimfsm skill`` reads at most this much plus one byte)."""

MAX_DOC_BYTES = 1024 * 1024
"""One ingested document (``claimfsm ingest --max-doc-bytes``); a JSONL line may be 64 KiB
longer for its other fields and JSON escapes."""

MAX_TOOL_RESULT_BYTES = 4 * 1024 * 1024
"""One tool call's result as JSON (a fetched page of the largest ingestible document fits)."""

MAX_INT = 2**53
"""Integers in a skill's input (revision numbers, counts): what every JSON reader keeps
exact, and far from the 64-bit limit that would make an echoed ``rev + 1`` unserialisable."""


def too_large(field: str, size: int, limit: int, unit: str = "characters") -> Envelope:
    """The ``INPUT_TOO_LARGE`` envelope for ``field`` (``rb=none``: the input is at fault)."""
    return Envelope.error(
        "INPUT_TOO_LARGE", f"{field}: {size} {unit}, the limit is {limit}", rb="none"
    )
