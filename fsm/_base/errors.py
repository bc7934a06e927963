"""The one root of claimfsm's errors, and the stable codes they carry.

Expected failures are data (an error envelope, a failed tool call, a chain check that
reports a broken link); exceptions are for contract errors. Every exception claimfsm
raises is a :class:`ClaimFsmError`: a stable ``code`` (an :class:`ErrorCode` member), a
message for people, and typed attributes that say where (``field``, ``sid``, ``rev``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from claimfsm._base.codes import CODE_PATTERN, ErrorCode, as_code, exit_status, http_status

__all__ = [
    "CODE_PATTERN",
    "BadInput",
    "ClaimFsmError",
    "ErrorCode",
    "exit_status",
    "http_status",
]


class ClaimFsmError(Exception):
    """Root of every error claimfsm raises.

    Args:
        msg: What went wrong, for people; it names the field when there is one.
        code: Replaces the class's code: an :class:`ErrorCode`, or the own UPPER_SNAKE
            code of a custom tool or skill.
        field: The input field, option or file the error is about.
        sid: The session it is about.
        rev: The revision it is about.
    """

    code: ErrorCode | str = ErrorCode.CLAIMFSM_ERROR
    # The attributes ``context`` reports; a subclass with typed attributes of its own
    # extends it.
    _where: ClassVar[tuple[str, ...]] = ("field", "sid", "rev")

    def __init__(self, msg: str, *, code: ErrorCode | str | None = None,
                 field: str | None = None, sid: str | None = None,
                 rev: int | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        if code is not None:
            self.code = as_code(code)
        self.field = field
        self.sid = sid
        self.rev = rev

    @property
    def context(self) -> dict[str, Any]:
        """The typed attributes that are set (``field``, ``sid``, ``rev`` and a subclass's
        own), as one dict: for logs, and for callers that read the old ``context``."""
        found = ((name, getattr(self, name, None)) for name in self._where)
        return {name: value for name, value in found if value is not None}

    def to_dict(self) -> dict[str, str]:
        """``{code, msg}`` as it appears in an error envelope's ``e``."""
        return {"code": str(self.code), "msg": self.msg}

    def __reduce__(self) -> tuple[Any, ...]:
        # Subclasses take other positional arguments than ``msg``: rebuilding one from
        # ``args`` alone (pickle's default) would fail in another process (Ray, a pool).
        return _restore, (type(self), self.args, self.__dict__)


def _restore(cls: type[ClaimFsmError], args: tuple[Any, ...],
             state: dict[str, Any]) -> ClaimFsmError:
    error = cls.__new__(cls, *args)
    error.__dict__.update(state)
    return error


class BadInput(ClaimFsmError, ValueError):
    """An input that is not what claimfsm accepts (the message names the field).

    Also a ``ValueError``: a caller that caught the ``ValueError`` these used to be still
    catches them.
    """

    code = ErrorCode.BAD_INPUT
