"""The engine's errors, under claimfsm's one root (:mod:`claimfsm._base.errors`).

Expected failures are envelopes, not exceptions. These are raised only for contract and
programming errors (a bad machine definition, an illegal trigger, a finished session).
``ClaimFsmError``, ``BadInput`` and ``ErrorCode`` are re-exported from the root, so
imports from this module keep working.
"""

from __future__ import annotations

from collections.abc import Sequence

from claimfsm._base.errors import BadInput, ClaimFsmError, ErrorCode

__all__ = [
    "BadInput",
    "ClaimFsmError",
    "ErrorCode",
    "IllegalTransition",
    "InputTooLarge",
    "MachineDefinitionError",
    "MachineMismatch",
    "SessionFailed",
    "SessionFinished",
    "UnknownSkill",
    "UnknownState",
    "check_claim",
]


class MachineDefinitionError(ClaimFsmError):
    """The machine's definition failed its checks; ``problems`` lists every one."""

    code = ErrorCode.BAD_MACHINE
    _where = (*ClaimFsmError._where, "problems")

    def __init__(self, msg: str, *, problems: Sequence[str] = ()) -> None:
        super().__init__(msg)
        self.problems: list[str] = list(problems)


class IllegalTransition(ClaimFsmError):
    """A move the machine does not allow from its current state."""

    code = ErrorCode.ILLEGAL_TRANSITION


class MachineMismatch(ClaimFsmError):
    """The session is in a state the driver's machine does not define."""

    code = ErrorCode.MACHINE_MISMATCH


class UnknownState(ClaimFsmError, KeyError):
    """A state the machine does not define. Also a ``KeyError``: looking a state up is a
    lookup, and callers catch one."""

    code = ErrorCode.MACHINE_MISMATCH

    def __str__(self) -> str:  # KeyError's would quote the message
        return self.msg


class SessionFinished(ClaimFsmError):
    """A step was asked of a session already in a final state."""

    code = ErrorCode.SESSION_FINISHED


class UnknownSkill(ClaimFsmError):
    """A state binds a skill that no registry knows."""

    code = ErrorCode.UNKNOWN_SKILL


class SessionFailed(ClaimFsmError):
    """A rollback was asked of a failed session without reopening it explicitly."""

    code = ErrorCode.SESSION_FAILED


class InputTooLarge(ClaimFsmError):
    """An input over one of the documented limits (docs/limits.md); ``limit`` is that
    limit, in the unit the message names."""

    code = ErrorCode.INPUT_TOO_LARGE
    _where = (*ClaimFsmError._where, "limit")

    def __init__(self, msg: str, *, field: str | None = None,
                 limit: int | None = None) -> None:
        super().__init__(msg, field=field)
        self.limit = limit


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
