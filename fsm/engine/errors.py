"""The engine's error tree: one root, a stable code and context on every error.

Expected failures are envelopes, not exceptions. These are raised only for contract and
programming errors (a bad machine definition, an illegal trigger, a finished session).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BadInput",
    "ClaimFsmError",
    "IllegalTransition",
    "InputTooLarge",
    "MachineDefinitionError",
    "MachineMismatch",
    "SessionFailed",
    "SessionFinished",
    "UnknownSkill",
    "check_claim",
]


class ClaimFsmError(Exception):
    """Root of the engine's errors. ``code`` is stable; ``context`` says where."""

    code = "CLAIMFSM_ERROR"

    def __init__(self, msg: str, **context: Any) -> None:
        super().__init__(msg)
        self.msg = msg
        self.context = context

    def to_dict(self) -> dict[str, Any]:
        """``{code, msg}`` as it appears in an error envelope's ``e``."""
        return {"code": self.code, "msg": self.msg}


class MachineDefinitionError(ClaimFsmError):
    """The machine's definition failed its checks (``context['problems']`` lists all)."""

    code = "BAD_MACHINE"


class IllegalTransition(ClaimFsmError):
    """A move the machine does not allow from its current state."""

    code = "ILLEGAL_TRANSITION"


class MachineMismatch(ClaimFsmError):
    """The session is in a state the driver's machine does not define."""

    code = "MACHINE_MISMATCH"


class SessionFinished(ClaimFsmError):
    """A step was asked of a session already in a final state."""

    code = "SESSION_FINISHED"


class UnknownSkill(ClaimFsmError):
    """A state binds a skill that no registry knows."""

    code = "UNKNOWN_SKILL"


class SessionFailed(ClaimFsmError):
    """A rollback was asked of a failed session without reopening it explicitly."""

    code = "SESSION_FAILED"


class InputTooLarge(ClaimFsmError):
    """An input over one of the documented limits (docs/limits.md)."""

    code = "INPUT_TOO_LARGE"


class BadInput(ClaimFsmError):
    """An input that is not what the engine accepts (the message names the field)."""

    code = "BAD_INPUT"


def check_claim(claim: str) -> None:
    """Refuse a claim the engine will not start a session for, before anything is stored."""
    from claimfsm.skills.limits import MAX_CLAIM_CHARS

    if len(claim) > MAX_CLAIM_CHARS:
        raise InputTooLarge(f"claim: {len(claim)} characters, the limit is {MAX_CLAIM_CHARS}",
                            field="claim", limit=MAX_CLAIM_CHARS)
    try:
        claim.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(f"claim: not valid text at character {exc.start} "
                       "(a lone surrogate: invalid UTF-8 on input?)", field="claim") from None
