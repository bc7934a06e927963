"""The tool registry refuses malformed tools, naming the tool and the problem."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from claimfsm.skills.tools.core import (
    DeadlineExceeded,
    ParameterError,
    QueryTypeUnsupported,
    Tool,
    ToolContext,
    ToolDefinitionError,
    ToolError,
    ToolExample,
    ToolResult,
)
from claimfsm.skills.tools.registry import ToolRegistry


class EchoParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    text: str = Field(min_length=1)


class EchoResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    text: str
    n: int = Field(ge=0)


class LooseParams(BaseModel):
    text: str


def echo(params: EchoParams, *, context: ToolContext) -> ToolResult[EchoResult]:
    return ToolResult.ok(EchoResult(text=params.text, n=len(params.text)))


def make(name: str = "echo", description: str = "Echo the text back.", **kw: Any) -> Tool[Any, Any]:
    fields: dict[str, Any] = {"params": EchoParams, "result": EchoResult, "handler": echo}
    fields.update(kw)
    return Tool(name=name, description=description, **fields)


def test_valid_tools_keep_declaration_order() -> None:
    reg = ToolRegistry([make("zeta"), make("alpha"), make("mid-1")])
    assert reg.names() == ("zeta", "alpha", "mid-1")
    assert reg.get("alpha") is not None and reg.get("alpha").name == "alpha"  # type: ignore[union-attr]
    assert reg.get("missing") is None
    assert "zeta" in reg and len(reg) == 3


@pytest.mark.parametrize("name", ["", "Echo", "has space", ".dot", "x" * 65, "é"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry([make(name)])
    assert "name must match" in str(info.value)
    assert info.value.code == "TOOL_DEFINITION"


def test_longest_legal_name_is_accepted() -> None:
    assert ToolRegistry([make("a" * 64)]).names() == ("a" * 64,)


@pytest.mark.parametrize("description", ["", "   ", "d" * 201])
def test_bad_descriptions_are_refused(description: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry([make("echo", description)])
    assert info.value.tool == "echo"
    assert "description" in info.value.problem


def test_description_of_200_chars_is_accepted() -> None:
    assert ToolRegistry([make(description="d" * 200)]).names() == ("echo",)


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry([make("echo"), make("other"), make("echo")])
    assert "duplicate" in str(info.value) and "'echo'" in str(info.value)


def test_params_model_must_forbid_extra_fields() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry([make(params=LooseParams)])
    assert "LooseParams" in str(info.value) and "forbid" in str(info.value)


def test_params_and_result_must_be_models() -> None:
    with pytest.raises(ToolDefinitionError, match="params"):
        ToolRegistry([make(params=dict)])
    with pytest.raises(ToolDefinitionError, match="result"):
        ToolRegistry([make(result=int)])
    with pytest.raises(ToolDefinitionError, match="handler"):
        ToolRegistry([make(handler="not callable")])


def test_valid_example_is_accepted() -> None:
    example = ToolExample("echo hi", EchoParams(text="hi"), EchoResult(text="hi", n=2))
    assert ToolRegistry([make(examples=(example,))]).names() == ("echo",)


def test_example_input_that_does_not_validate_is_refused() -> None:
    bad = EchoParams.model_construct(text="")  # bypasses validation: min_length=1
    example = ToolExample("empty", bad, EchoResult(text="", n=0))
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry([make(examples=(example,))])
    assert "examples[0].input" in str(info.value) and "text" in str(info.value)


def test_checked_tools_skip_only_the_re_validation_of_their_examples() -> None:
    bad = EchoParams.model_construct(text="")  # what the re-validation would refuse
    tool = make(examples=(ToolExample("empty", bad, EchoResult(text="", n=0)),))
    assert ToolRegistry([tool], checked=[tool]).names() == ("echo",)
    with pytest.raises(ToolDefinitionError, match=r"examples\[0\]\.input"):
        ToolRegistry([tool], checked=[make(examples=tool.examples)])  # equal, not the one
    wrong = make(examples=(ToolExample("wrong", EchoParams(text="hi"), "not a model"),))
    with pytest.raises(ToolDefinitionError, match=r"examples\[0\]\.output: expected"):
        ToolRegistry([wrong], checked=[wrong])  # the rest is still checked
    loose = make(params=LooseParams)
    with pytest.raises(ToolDefinitionError, match="forbid extra"):
        ToolRegistry([loose], checked=[loose])


def test_the_built_in_tools_examples_validate_against_their_models() -> None:
    # Engine.open trusts them (checked=): built with model_construct, they are
    # validated here instead of at every open.
    from claimfsm.skills.tools.builtin import builtin_tools
    from claimfsm.skills.tools.index import EvidenceIndex
    from claimfsm.skills.tools.model_chat import model_tool
    from claimfsm.skills.tools.registry import validate_tool

    index = EvidenceIndex.open(":memory:")
    try:
        tools = (*builtin_tools(index), model_tool())
        assert sum(len(t.examples) for t in tools) >= 6
        for tool in tools:
            validate_tool(tool)  # the full check, examples re-validated
            for example in tool.examples:
                for value, model in ((example.input, tool.params),
                                     (example.output, tool.result)):
                    # what validating the given fields builds: the same model
                    again = model.model_validate(value.model_dump(include=value.model_fields_set))
                    assert type(value) is model
                    assert again.model_dump(mode="json") == value.model_dump(mode="json")
                    assert again.model_fields_set == value.model_fields_set
    finally:
        index.close()


def test_example_output_of_wrong_model_is_refused() -> None:
    example = ToolExample("wrong output", EchoParams(text="hi"), EchoParams(text="hi"))
    with pytest.raises(ToolDefinitionError) as info:
        ToolRegistry([make(examples=(example,))])
    assert "examples[0].output" in str(info.value) and "EchoResult" in str(info.value)


def test_example_description_over_200_chars_is_refused() -> None:
    example = ToolExample("x" * 201, EchoParams(text="hi"), EchoResult(text="hi", n=2))
    with pytest.raises(ToolDefinitionError, match=r"examples\[0\]\.description"):
        ToolRegistry([make(examples=(example,))])


def test_with_tools_returns_a_new_registry_and_refuses_duplicates() -> None:
    base = ToolRegistry([make("echo")])
    more = base.with_tools(make("mine"))
    assert more.names() == ("echo", "mine")
    assert base.names() == ("echo",)
    with pytest.raises(ToolDefinitionError, match="duplicate"):
        base.with_tools(make("echo"))


def test_error_hierarchy_codes_and_user_messages() -> None:
    param = ParameterError("lim", "must be between 1 and 20")
    assert isinstance(param, ToolError)
    assert param.code == "BAD_ARGS"
    assert param.user_message() == "lim: must be between 1 and 20"
    unsupported = QueryTypeUnsupported("regex", ["keyword", "phrase"])
    assert unsupported.code == "QUERY_TYPE_UNSUPPORTED"
    assert "keyword, phrase" in unsupported.user_message()
    assert "'regex'" in unsupported.user_message()
    assert DeadlineExceeded().code == "DEADLINE_EXCEEDED"
    custom = ToolError("boom", code="MY_CODE", context={"a": 1})
    assert (custom.code, custom.msg, custom.context) == ("MY_CODE", "boom", {"a": 1})


def test_tool_result_factories() -> None:
    ok = ToolResult.ok(EchoResult(text="a", n=1), "fine")
    assert (ok.success, ok.message, ok.code) == (True, "fine", None)
    err = ToolResult.error("nope", code="NO_HITS")
    assert (err.success, err.value, err.code) == (False, None, "NO_HITS")
    assert ToolResult.error("nope").code == "TOOL_ERROR"
    with pytest.raises(ValueError, match="UPPER_SNAKE"):
        ToolResult.error("nope", code="lower")
