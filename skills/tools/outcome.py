"""How a step of the executor's pipeline fails: the internal :class:`_Failure` it raises,
carried to the call's single exit point, and what turns an exception or a handler's
result into one.

Its own module because the executor and its concurrent half (:mod:`.gather`,
:mod:`.inflight`) all raise and read these failures; every name is private to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from claimfsm._base.errors import ClaimFsmError
from claimfsm.skills.base import describe_validation_error
from claimfsm.skills.tools.core import Tool, ToolError, ToolResult

__all__: list[str] = []


class _Failure(ClaimFsmError):
    """Internal: a failed step of the pipeline, carried to the single exit point."""

    def __init__(self, code: str, message: str, value: dict[str, Any] | None = None) -> None:
        super().__init__(message, code=code)
        self.message = message
        self.value = value


def _exception_failure(tool: str, exc: Exception) -> _Failure:
    if isinstance(exc, ToolError):
        return _Failure(exc.code, exc.user_message())
    if isinstance(exc, ValidationError):
        return _Failure("TOOL_ERROR", f"{tool}: {describe_validation_error(exc)}")
    if isinstance(exc, TypeError):
        return _Failure("TOOL_TYPE_ERROR", f"{tool}: TypeError: {exc}")
    return _Failure("TOOL_ERROR", f"{tool}: {type(exc).__name__}: {exc}")


def _validated(tool: Tool[Any, Any], result: object) -> BaseModel:
    model: type[BaseModel] = tool.result
    if not isinstance(result, ToolResult):
        raise _Failure(
            "TOOL_TYPE_ERROR",
            f"{tool.name}: handler returned {type(result).__name__}, expected ToolResult",
        )
    if not result.success:
        payload = result.value
        raise _Failure(
            result.code or "TOOL_ERROR",
            result.message or f"{tool.name}: failed",
            payload.model_dump(mode="json") if isinstance(payload, BaseModel) else None,
        )
    value = result.value
    if isinstance(value, model):
        return value
    if isinstance(value, Mapping):
        try:
            return model.model_validate(dict(value))
        except ValidationError as exc:
            raise _Failure(
                "TOOL_TYPE_ERROR",
                f"{tool.name}: result {describe_validation_error(exc)}",
            ) from None
    raise _Failure(
        "TOOL_TYPE_ERROR",
        f"{tool.name}: handler returned a {type(value).__name__} value, "
        f"expected {model.__name__}",
    )
