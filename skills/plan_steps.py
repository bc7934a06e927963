"""Plan steps (seed 004): tool requests as steps with a contract.

A :class:`PlanStep` is one tool request plus what the runtime needs to run it once and
only once: ``dependencies`` (steps that must have finished first), ``expected_key`` (where
its result is kept in the session's plan-step memory, ``state.outputs``), ``output_path``
(which part of the result is kept), ``done_check`` (skip the step when its key is already
there) and a ``status``.

Expected keys are content addresses (``tool:digest-of-params``), so two steps asking the
same tool the same thing share one result: the second is ``skipped`` and reuses it. Steps
are validated against the tool's params model before anything runs; failures are
:class:`~claimfsm.skills.tools.core.ToolError`\\ s with user-facing messages naming the field, or
for an unsupported query type, the supported ones.
"""

from __future__ import annotations

import hashlib
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from claimfsm._base.errors import ErrorCode
from claimfsm.skills.tools.core import ParameterError, QueryTypeUnsupported, ToolError
from claimfsm.skills.tools.registry import ToolRegistry

__all__ = [
    "FINISHED",
    "OUTPUT_PATHS",
    "QUERY_TYPE_FIELD",
    "DoneCheck",
    "OutputPathMissing",
    "PlanError",
    "PlanStep",
    "StepStatus",
    "StepUpdate",
    "check_plan",
    "expected_key",
    "extract",
    "nest",
    "registry_of",
    "runnable",
    "satisfied",
    "steps_for",
    "validate_params",
]

StepStatus = Literal["pending", "in_progress", "completed", "failed", "skipped"]
#: ``present``: the step is done when its expected_key is in the outputs; ``never``: always run.
DoneCheck = Literal["present", "never"]

#: A step is finished (its dependants may run) in any of these states.
FINISHED: frozenset[str] = frozenset({"completed", "failed", "skipped"})

#: The part of each built-in tool's result a step keeps; other tools keep the whole value.
OUTPUT_PATHS: Mapping[str, tuple[str, ...]] = {
    "search": ("hits",),
    "web_search": ("hits",),
    "kb_lookup": ("facts",),
}

#: The params field that names a tool's query type (``search`` reads one source kind).
QUERY_TYPE_FIELD = "src"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid", populate_by_name=True)


class PlanStep(_Model):
    """One tool request as a step; ``for`` (the subclaim) is ``for_`` in Python."""

    id: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    for_: str = Field(alias="for")
    description: str = ""
    dependencies: list[str] = Field(default_factory=list)
    expected_key: str = Field(min_length=1)
    output_path: list[str] | None = None
    done_check: DoneCheck = "present"
    status: StepStatus = "pending"
    completed_rev: int | None = None
    code: str | None = None

    def dump(self) -> dict[str, Any]:
        """The JSON form kept in ``state.steps``."""
        return self.model_dump(mode="json", by_alias=True)


class StepUpdate(_Model):
    """What a RETRIEVAL step reports about one plan step it finished."""

    id: str
    status: StepStatus
    rev: int = Field(ge=0)
    code: str | None = None


class PlanError(ToolError):
    """A plan that cannot run (unknown or later dependency, duplicate id)."""

    code = ErrorCode.BAD_PLAN


class OutputPathMissing(ToolError):
    """A result lacks the part a step's ``output_path`` names."""

    code = ErrorCode.OUTPUT_PATH_MISSING


def expected_key(tool: str, params: Mapping[str, Any]) -> str:
    """``tool:digest``: the same tool with the same params always gets the same key."""
    raw = orjson.dumps(dict(params), option=orjson.OPT_SORT_KEYS)
    return f"{tool}:{hashlib.sha256(raw).hexdigest()[:16]}"


def extract(value: Any, path: Sequence[str] | None) -> Any:
    """The part of ``value`` at ``path`` (``None``: all of it); :class:`OutputPathMissing`."""
    current = value
    for i, part in enumerate(path or ()):
        if not isinstance(current, Mapping) or part not in current:
            where = ".".join(path[: i + 1]) if path else part
            raise OutputPathMissing(f"output_path: the result has no {where!r}")
        current = current[part]
    return current


def nest(path: Sequence[str] | None, part: Any) -> Any:
    """The inverse of :func:`extract`: ``part`` placed back at ``path``."""
    for key in reversed(list(path or ())):
        part = {key: part}
    return part


def satisfied(step: PlanStep, outputs: Mapping[str, Any]) -> bool:
    """Whether ``step``'s done_check holds: its result is already in the outputs."""
    return step.done_check == "present" and step.expected_key in outputs


def runnable(steps: Sequence[PlanStep]) -> list[PlanStep]:
    """Pending steps whose dependencies have all finished, in plan order."""
    status = {s.id: s.status for s in steps}
    return [
        s for s in steps
        if s.status == "pending" and all(status.get(d) in FINISHED for d in s.dependencies)
    ]


def check_plan(steps: Sequence[PlanStep]) -> None:
    """Raise :class:`PlanError` unless ids are unique and every dependency is an earlier
    step (which also rules out cycles)."""
    seen: set[str] = set()
    for i, step in enumerate(steps):
        if step.id in seen:
            raise PlanError(f"steps.{i}.id: duplicate step id {step.id!r}")
        for dep in step.dependencies:
            if dep not in seen:
                raise PlanError(
                    f"steps.{i}.dependencies: {dep!r} is not an earlier step of the plan"
                )
        seen.add(step.id)


def steps_for(
    requests: Iterable[Mapping[str, Any]],
    existing: Sequence[PlanStep] = (),
    *,
    reasons: Mapping[str, str] | None = None,
) -> list[PlanStep]:
    """New pending steps for ``requests`` (``{id, tool, args, for}``).

    A request listed in ``reasons`` is a follow-up: it depends on every earlier step of
    its subclaim (the results it was judged against), and its reason is its description.
    """
    why = dict(reasons or {})
    prior: dict[str, list[str]] = {}
    for step in existing:
        prior.setdefault(step.for_, []).append(step.id)
    out: list[PlanStep] = []
    for req in requests:
        rid, tool, sub = str(req["id"]), str(req["tool"]), str(req["for"])
        args = dict(req.get("args") or {})
        deps = list(prior.get(sub, [])) if rid in why else []
        path = OUTPUT_PATHS.get(tool)
        q = args.get("q")
        desc = why.get(rid) or (f"{tool} {q!r} for {sub}" if q else f"{tool} for {sub}")
        out.append(PlanStep(
            id=rid, tool=tool, params=args, for_=sub, description=desc, dependencies=deps,
            expected_key=expected_key(tool, args),
            output_path=list(path) if path is not None else None,
        ))
        prior.setdefault(sub, []).append(rid)
    return out


def registry_of(tools: object) -> ToolRegistry | None:
    """The registry behind a tool caller (the executor has one; a replay may not)."""
    registry = getattr(tools, "registry", None)
    return registry if isinstance(registry, ToolRegistry) else None


def _supported(model: type[BaseModel], field: str) -> tuple[str, ...] | None:
    info = model.model_fields.get(field)
    if info is None or typing.get_origin(info.annotation) is not Literal:
        return None
    return tuple(str(a) for a in typing.get_args(info.annotation))


def validate_params(
    registry: ToolRegistry, tool: str, params: Mapping[str, Any], *, where: str = "params"
) -> BaseModel:
    """The parsed params of one call, or a :class:`ToolError` explaining the refusal.

    Unknown tool -> ``UNKNOWN_TOOL`` (listing the known ones); a bad ``src`` on a tool whose
    ``src`` is a fixed set -> :class:`QueryTypeUnsupported` (listing the supported types);
    any other bad field -> :class:`ParameterError` naming ``where.field``.
    """
    spec = registry.get(tool)
    if spec is None:
        known = ", ".join(registry.names()) or "(none)"
        raise ToolError(f"unknown tool {tool!r}; known tools: {known}", code="UNKNOWN_TOOL")
    model: type[BaseModel] = spec.params
    try:
        return model.model_validate(dict(params))
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = [str(p) for p in first.get("loc", ())]
        supported = _supported(model, QUERY_TYPE_FIELD)
        if loc == [QUERY_TYPE_FIELD] and supported and first.get("type") == "literal_error":
            raise QueryTypeUnsupported(str(params.get(QUERY_TYPE_FIELD)), supported) from None
        field = ".".join([where, *loc]) if loc else where
        more = f" (+{len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise ParameterError(field, f"{first.get('msg', 'invalid')}{more}", tool=tool) from None
