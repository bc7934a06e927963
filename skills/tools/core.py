"""The tool runtime's core types: tools, their results, the context a handler gets.

A tool is a typed function: a params model (unknown fields refused), a result model and a
handler ``handler(params, *, context) -> ToolResult``. Runtime failures are data (a failed
:class:`ToolResult`, and in the end a failed ``ToolCall``); the exceptions here are for
contract errors (a malformed tool definition, a handler refusing its parameters) and the
executor turns any of them raised by a handler into a failed call with the error's code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from claimfsm._base.errors import CODE_PATTERN, BadInput, ClaimFsmError, ErrorCode
from claimfsm._base.record import FACTORY, Record
from claimfsm.skills.context import Clock

__all__ = [
    "CODE_PATTERN",
    "BudgetTracker",
    "DeadlineExceeded",
    "ParameterError",
    "QueryTypeUnsupported",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolExample",
    "ToolResult",
]

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


class ToolError(ClaimFsmError):
    """Root of the tool runtime's contract errors: a stable ``code``, a ``msg``, and
    ``context``: the typed attributes that are set plus a custom tool's own ``context``
    details (JSON-able; the library's tool errors use typed attributes instead)."""

    code = ErrorCode.TOOL_ERROR

    def __init__(
        self, msg: str, *, code: ErrorCode | str | None = None, field: str | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(msg, code=code, field=field)
        self.details: dict[str, Any] = dict(context or {})

    @property
    def context(self) -> dict[str, Any]:
        """The typed attributes that are set, then the custom details."""
        return {**super().context, **self.details}

    def user_message(self) -> str:
        """A one-line message for people (and for the failed ``ToolCall``)."""
        return self.msg


class ToolDefinitionError(ToolError):
    """A tool (or the runtime's configuration) is malformed; names the tool and the problem."""

    code = ErrorCode.TOOL_DEFINITION
    _where = (*ToolError._where, "tool", "problem")

    def __init__(self, tool: str, problem: str) -> None:
        super().__init__(f"tool {tool!r}: {problem}")
        self.tool = tool
        self.problem = problem


class ParameterError(ToolError):
    """A parameter was refused; the message and ``field`` name it."""

    code = ErrorCode.BAD_ARGS
    _where = (*ToolError._where, "tool")

    def __init__(self, field: str, problem: str, *, tool: str | None = None,
                 context: Mapping[str, Any] | None = None) -> None:
        super().__init__(problem, field=field, context=context)
        self.tool = tool

    def user_message(self) -> str:
        return f"{self.field}: {self.msg}"


class QueryTypeUnsupported(ToolError):
    """A query of a kind the tool does not handle; the message names the supported kinds."""

    code = ErrorCode.QUERY_TYPE_UNSUPPORTED
    _where = (*ToolError._where, "query_type", "supported")

    def __init__(self, query_type: str, supported: Iterable[str]) -> None:
        kinds = tuple(supported)
        super().__init__(
            f"query type {query_type!r} is not supported; supported types: "
            + (", ".join(kinds) if kinds else "(none)"),
        )
        self.query_type = query_type
        self.supported = kinds


class DeadlineExceeded(ToolError):
    """The deadline passed (before a call, or at a handler's heartbeat)."""

    code = ErrorCode.DEADLINE_EXCEEDED
    _where = (*ToolError._where, "deadline", "now")

    def __init__(
        self, msg: str = "deadline exceeded", *, deadline: datetime | None = None,
        now: datetime | None = None,
    ) -> None:
        super().__init__(msg)
        self.deadline = deadline
        self.now = now


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class ToolResult(Record, Generic[R], frozen=True):
    """What a handler returns: success with a typed ``value``, or a failure with a ``code``."""

    success: bool
    value: R | None
    message: str = ""
    code: str | None = None

    def __init__(self, success: bool, value: R | None, message: str = "",
                 code: str | None = None) -> None:
        if code is not None and not CODE_PATTERN.match(code):
            raise BadInput(f"code: {code!r} is not UPPER_SNAKE", field="code")
        self._fill(success=success, value=value, message=message, code=code)

    @classmethod
    def ok(cls, value: R, message: str = "") -> ToolResult[R]:
        """Success carrying ``value`` (an instance of the tool's result model)."""
        return cls(success=True, value=value, message=message)

    @classmethod
    def error(cls, message: str, code: str = "TOOL_ERROR") -> ToolResult[Any]:
        """An expected failure, as data."""
        return cls(success=False, value=None, message=message, code=code)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class ToolExample(Record, frozen=True):
    """One documented use of a tool; the registry validates it against the tool's models."""

    description: str
    input: BaseModel
    output: BaseModel

    def __init__(self, description: str, input: BaseModel, output: BaseModel) -> None:
        self._fill(description=description, input=input, output=output)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Tool(Record, Generic[P, R], frozen=True):
    """A named, typed tool. ``handler(params, *, context)`` returns a :class:`ToolResult`."""

    name: str
    description: str
    params: type[P]
    result: type[R]
    handler: Callable[..., ToolResult[R]]
    examples: tuple[ToolExample, ...] = ()
    #: Extra fields of the call's ``ToolInvoked`` event, from its args and (JSON) value.
    telemetry: Callable[[dict[str, Any], dict[str, Any] | None], dict[str, Any]] | None = None

    def __init__(self, name: str, description: str, params: type[P], result: type[R],
                 handler: Callable[..., ToolResult[R]], examples: tuple[ToolExample, ...] = (),
                 telemetry: Callable[[dict[str, Any], dict[str, Any] | None],
                                     dict[str, Any]] | None = None) -> None:
        self._fill(name=name, description=description, params=params, result=result,
                   handler=handler, examples=examples, telemetry=telemetry)


class BudgetTracker:
    """A tool-call budget (``max_calls``), a model-token budget (``max_tokens``) and an
    optional deadline; thread-safe.

    Its state (``{"calls": n}``, with ``"tokens": t`` once a model call used some) is
    JSON-able so the driver can keep it in the session.
    """

    def __init__(
        self, max_calls: int | None = None, deadline: datetime | None = None, *, calls: int = 0,
        max_tokens: int | None = None, tokens: int = 0,
    ) -> None:
        if max_calls is not None and max_calls < 0:
            raise BadInput("max_calls: must be >= 0", field="max_calls")
        self.max_calls = max_calls
        self.deadline = deadline
        self._calls = calls
        self.max_tokens = max_tokens
        self._tokens = tokens
        self._lock = threading.Lock()

    @property
    def tokens(self) -> int:
        """Model tokens used so far."""
        return self._tokens

    @property
    def tokens_left(self) -> int | None:
        """Model tokens left, or ``None`` when unbounded."""
        if self.max_tokens is None:
            return None
        return max(0, self.max_tokens - self._tokens)

    def add_tokens(self, used: int) -> None:
        """Count tokens a model call used (never given back)."""
        with self._lock:
            self._tokens += max(0, int(used))

    @property
    def calls(self) -> int:
        """Calls consumed so far."""
        return self._calls

    @property
    def remaining(self) -> int | None:
        """Calls left, or ``None`` when unbounded."""
        if self.max_calls is None:
            return None
        return max(0, self.max_calls - self._calls)

    def exhausted(self) -> bool:
        """True when no call may be made."""
        return self.max_calls is not None and self._calls >= self.max_calls

    def try_consume(self) -> bool:
        """Take one call from the budget; False (and nothing taken) when none is left."""
        with self._lock:
            if self.max_calls is not None and self._calls >= self.max_calls:
                return False
            self._calls += 1
            return True

    def state(self) -> dict[str, Any]:
        """The JSON-able state."""
        return {"calls": self._calls, "tokens": self._tokens} if self._tokens else {
            "calls": self._calls}

    def load(self, state: Mapping[str, Any]) -> None:
        """Restore a state produced by :meth:`state`."""
        calls = state.get("calls", 0)
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
            raise BadInput("calls: expected a non-negative integer", field="calls")
        with self._lock:
            self._calls = calls


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class ToolContext(Record):
    """What a handler receives besides its params.

    ``session`` is a read-only view (``sid``, ``policy``); ``resources`` are named objects
    a tool may use (an index, a page store). ``beat()`` is the heartbeat of long work.
    """

    clock: Clock
    deadline: datetime | None = None
    budget: BudgetTracker | None = None
    session: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    resources: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    tool: str = ""
    beats: list[datetime] = field(default_factory=list)

    def __init__(self, clock: Clock, deadline: datetime | None = None,
                 budget: BudgetTracker | None = None, session: Mapping[str, Any] = FACTORY,
                 resources: Mapping[str, Any] = FACTORY, tool: str = "",
                 beats: list[datetime] = FACTORY) -> None:
        self.clock = clock
        self.deadline = deadline
        self.budget = budget
        self.session = MappingProxyType({}) if session is FACTORY else session
        self.resources = MappingProxyType({}) if resources is FACTORY else resources
        self.tool = tool
        self.beats = [] if beats is FACTORY else beats

    def beat(self) -> None:
        """Record a heartbeat; raise :class:`DeadlineExceeded` once the deadline has passed."""
        now = self.clock.now()
        self.beats.append(now)
        if self.deadline is not None and now >= self.deadline:
            raise DeadlineExceeded(
                f"{self.tool or 'tool'}: deadline {self.deadline.isoformat()} passed "
                f"at {now.isoformat()}",
                deadline=self.deadline,
                now=now,
            )

    def resource(self, name: str) -> Any:
        """The named resource; a :class:`ToolError` naming it when it is missing."""
        try:
            return self.resources[name]
        except KeyError:
            raise ToolError(f"resource {name!r} is not available",
                            code=ErrorCode.MISSING_RESOURCE) from None
