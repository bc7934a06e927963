"""What a replay reports: the first divergence, the outcome on both sides, and whether
the record's lines were verified against their seals."""

from __future__ import annotations

from typing import Any, Literal

from claimfsm._base.models import Frozen

__all__ = ["MODES", "Divergence", "Mode", "Outcome", "ReplayReport"]

Mode = Literal["strict", "tools", "live"]
MODES: tuple[Mode, ...] = ("strict", "tools", "live")


class Divergence(Frozen):
    """Where the replay first parted from the record.

    ``kind``: ``STEP_MISMATCH`` (the line's ``before`` or ``skill`` is not the replayed
    step's), ``INPUT_MISMATCH`` (the skill got another input), ``ENVELOPE_MISMATCH``,
    ``UNRECORDED_TOOL_CALL``, ``MISSING_TOOL_CALL``,
    ``COMMIT_MISMATCH`` (same envelope, different commit or next state),
    ``STATE_MISMATCH`` (the committed ``policy`` or ``runtime`` differ),
    ``HASH_MISMATCH`` (the revision's chain hash differs from the line's ``h``: its state
    or events differ where the line does not show them),
    ``SESSION_ENDED`` (the replay reached a final state with record lines left) or
    ``END_MISMATCH`` (every step matched but the closing line's state, revision or
    verdict is not the replayed session's).
    """

    step: int
    line: int
    state: str
    skill: str | None
    kind: str
    path: str
    expected: Any
    actual: Any


class Outcome(Frozen):
    """How a session ended: final FSM state, head revision, verdict, steps taken."""

    fsm: str
    rev: int
    verdict: str | None
    steps: int


class ReplayReport(Frozen):
    """The result of one replay; ``ok`` when nothing diverged.

    ``format`` is the record's; ``verified`` says its lines were read and matched their
    seals (format 2; then strict and tools mode also check every revision's chain hash,
    a difference being a divergence). A format 1 record replays ``ok`` but unverified.
    """

    source: str
    mode: Mode
    sid: str
    steps: int
    ok: bool
    divergence: Divergence | None
    expected: Outcome
    actual: Outcome
    verdict_changed: bool
    format: int = 2
    verified: bool = False

    def to_json(self) -> dict[str, Any]:
        """The report as JSON data (``replay --json``)."""
        return self.model_dump(mode="json")
