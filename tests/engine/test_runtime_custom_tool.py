"""Users' own tools: the worked example in docs/ runs, and registration errors are clear."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.skills.tools.core import Tool, ToolDefinitionError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "custom_tool.py"


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return runpy.run_path(str(EXAMPLE), run_name="custom_tool_example")


def test_the_worked_example_changes_the_verdict_through_the_bound_tool(
    example: dict[str, Any], tmp_path: Path
) -> None:
    without = example["main"](bind=False)
    with_tool = example["main"](str(tmp_path / "example.db"))
    assert (without.state.verdict or {})["label"] == "NOT_ENOUGH_INFO"
    assert (with_tool.state.verdict or {})["label"] == "SUPPORTS"
    almanac = [s for s in with_tool.state.steps if s["tool"] == "almanac"]
    assert almanac and all(s["status"] == "completed" for s in almanac)
    assert almanac[0]["params"] == {"q": with_tool.state.plans[0]["q"][0],
                                    "lim": with_tool.state.plans[0]["lim"]}
    cited = [e["id"] for items in with_tool.state.evidence.values() for e in items]
    assert "alm-1" in cited


def test_the_worked_example_runs_as_a_script() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, str(EXAMPLE)], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout.splitlines()
    assert len(out) == 2
    assert out[0].startswith("almanac bound: False  verdict: NOT_ENOUGH_INFO  tools: ")
    assert "almanac" not in out[0].split("tools: ")[1]
    assert out[1].startswith("almanac bound: True   verdict: SUPPORTS  tools: almanac")


def test_registration_refuses_a_duplicate_name(example: dict[str, Any]) -> None:
    tool: Tool[Any, Any] = example["ALMANAC_TOOL"]
    clash = Tool(name="search", description=tool.description, params=tool.params,
                 result=tool.result, handler=tool.handler)
    with pytest.raises(ToolDefinitionError, match="'search': duplicate tool name"):
        Engine.open(None, config=EngineConfig(extra_tools=[clash]))


@pytest.mark.parametrize("bind, needle", [
    ({"RETRIEVAL": ["nope"]}, "'nope': bound to RETRIEVAL but not registered"),
    ({"DONE": ["almanac"]}, "cannot bind to state 'DONE'"),
    ({"NOWHERE": ["almanac"]}, "cannot bind to state 'NOWHERE'"),
    ({"EXTRACT": ["almanac"]}, "skill 'evidence_extract' takes no bound tools"),
])
def test_binding_errors_name_the_tool_and_the_state(
    example: dict[str, Any], bind: dict[str, list[str]], needle: str
) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Engine.open(None, config=EngineConfig(extra_tools=[example["ALMANAC_TOOL"]], bind=bind))
    assert needle in str(info.value)
