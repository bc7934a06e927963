"""The engine's error tree: one root, a stable code and context on every error.

Expected failures are envelopes, not exceptions. These are raised only for contract and
programming errors (a bad machine definition, an illegal trigger, a finished session).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ClaimFsmError",
    "IllegalTransition",
    "MachineDefinitionError",
    "SessionFailed",
    "SessionFinished",
    "UnknownSkill",
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


class SessionFinished(ClaimFsmError):
    """A step was asked of a session already in a final state."""

    code = "SESSION_FINISHED"


class UnknownSkill(ClaimFsmError):
    """A state binds a skill that no registry knows."""

    code = "UNKNOWN_SKILL"


class SessionFailed(ClaimFsmError):
    """A rollback was asked of a failed session without reopening it explicitly."""

    code = "SESSION_FAILED"
