"""The tool registry: validated tool definitions, in declaration order.

Everything that can be wrong with a tool is refused here, at construction, with a
:class:`ToolDefinitionError` naming the tool and the problem, so the executor can trust
what it dispatches to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, ValidationError

from claimfsm.skills.base import describe_validation_error
from claimfsm.skills.tools.core import Tool, ToolDefinitionError

__all__ = ["MAX_DESCRIPTION", "NAME_PATTERN", "ToolRegistry", "validate_tool"]

# A dot namespaces a tool (``model.chat``).
NAME_PATTERN = re.compile(r"^[a-z0-9_][a-z0-9_.-]{0,63}$")
MAX_DESCRIPTION = 200


def _is_model(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _check_example(tool: Tool[Any, Any], index: int, revalidate: bool = True) -> None:
    example = tool.examples[index]
    where = f"examples[{index}]"
    if not isinstance(example.description, str) or len(example.description) > MAX_DESCRIPTION:
        raise ToolDefinitionError(
            tool.name, f"{where}.description: must be a string of at most {MAX_DESCRIPTION} chars"
        )
    for part, model in (("input", tool.params), ("output", tool.result)):
        value = getattr(example, part)
        if not isinstance(value, BaseModel):
            raise ToolDefinitionError(
                tool.name, f"{where}.{part}: expected a {model.__name__} instance"
            )
        # Re-validating the dump catches model_construct()-ed or foreign-model examples.
        if not revalidate:
            continue
        try:
            model.model_validate(value.model_dump())
        except ValidationError as exc:
            raise ToolDefinitionError(
                tool.name,
                f"{where}.{part} does not validate against {model.__name__}: "
                f"{describe_validation_error(exc)}",
            ) from None


def validate_tool(tool: Tool[Any, Any], *, examples_checked: bool = False) -> None:
    """Raise :class:`ToolDefinitionError` if ``tool`` is malformed. With
    ``examples_checked`` its examples are not validated against its models again (see
    :class:`ToolRegistry`)."""
    if not isinstance(tool, Tool):
        raise ToolDefinitionError(repr(tool)[:64], "not a Tool")
    name = tool.name
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ToolDefinitionError(str(name), "name must match ^[a-z0-9_][a-z0-9_.-]{0,63}$")
    desc = tool.description
    if not isinstance(desc, str) or not desc.strip() or len(desc) > MAX_DESCRIPTION:
        raise ToolDefinitionError(
            name, f"description must be 1..{MAX_DESCRIPTION} characters (not blank)"
        )
    if not _is_model(tool.params):
        raise ToolDefinitionError(name, "params must be a pydantic model class")
    if tool.params.model_config.get("extra") != "forbid":
        raise ToolDefinitionError(
            name, f"params model {tool.params.__name__} must forbid extra fields (extra='forbid')"
        )
    if not _is_model(tool.result):
        raise ToolDefinitionError(name, "result must be a pydantic model class")
    if not callable(tool.handler):
        raise ToolDefinitionError(name, "handler must be callable")
    if not isinstance(tool.examples, tuple):
        raise ToolDefinitionError(name, "examples must be a tuple of ToolExample")
    for index in range(len(tool.examples)):
        _check_example(tool, index, revalidate=not examples_checked)


class ToolRegistry:
    """An immutable, ordered set of validated tools; duplicate names are refused.

    ``checked`` are tools among ``tools`` whose examples were validated against their
    models elsewhere: the built-in ones, by the test suite (their examples are built
    with ``model_construct``). Everything else about them is checked here as usual; only
    the examples' re-validation, which compiles each model's validator (16 for the
    built-in tools: ~12 M instructions, at every ``Engine.open``), is skipped.
    """

    def __init__(self, tools: Iterable[Tool[Any, Any]] = (), *,
                 checked: Iterable[Tool[Any, Any]] = ()) -> None:
        by_name: dict[str, Tool[Any, Any]] = {}
        known = [*checked]
        for tool in tools:
            validate_tool(tool, examples_checked=any(tool is k for k in known))
            if tool.name in by_name:
                raise ToolDefinitionError(tool.name, "duplicate tool name")
            by_name[tool.name] = tool
        self._tools = by_name

    def get(self, name: str) -> Tool[Any, Any] | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        """Tool names in declaration order."""
        return tuple(self._tools)

    def tools(self) -> tuple[Tool[Any, Any], ...]:
        """The tools in declaration order."""
        return tuple(self._tools.values())

    def with_tools(self, *tools: Tool[Any, Any]) -> ToolRegistry:
        """A new registry with ``tools`` appended (this one is unchanged)."""
        return ToolRegistry((*self._tools.values(), *tools))

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[Any, Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)!r})"
