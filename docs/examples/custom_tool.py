"""A worked example: write a tool, register it, bind it to RETRIEVAL, verify a claim.

The bundled demo corpus says nothing about Jupiter's rings, so "Jupiter has a ring
system." ends NOT_ENOUGH_INFO. Here an "almanac" tool (a stand-in for your own API,
database or file) answers with knowledge-base facts; bound to RETRIEVAL it gets one
request per planned query, its facts flow through EXTRACT into VERIFY, and the verdict
changes. Run it with ``python docs/examples/custom_tool.py``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from claimfsm import Engine, EngineConfig
from claimfsm.skills.analysis.text import stem, tokens
from claimfsm.skills.tools.core import Tool, ToolContext, ToolExample, ToolResult
from claimfsm.skills.tools.index import Fact
from claimfsm.state.model import Revision

# 1. The data behind the tool. Real tools call out to something; this one reads a table.
ALMANAC: tuple[Fact, ...] = (
    Fact(id="alm-1", subject="Jupiter", relation="has",
         object="a ring system of faint dust rings", source="almanac"),
    Fact(id="alm-2", subject="Saturn", relation="has", object="the brightest ring system",
         source="almanac"),
)


# 2. Typed params and result. Extra fields must be forbidden (the registry checks).
class AlmanacParams(BaseModel):
    """``almanac``: a query and a result limit (a bound tool receives ``q`` and ``lim``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    q: str = Field(min_length=1, max_length=500)
    lim: int = Field(default=3, ge=1, le=20)


class AlmanacResult(BaseModel):
    """Facts, best first: the ``facts`` shape EXTRACT already knows how to read."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    facts: tuple[Fact, ...]


# 3. The handler: params in, ToolResult out. Expected failures are ToolResult.error(...);
#    anything it raises becomes a failed call too, and never stops the session.
def handle(params: AlmanacParams, *, context: ToolContext) -> ToolResult[AlmanacResult]:
    """Facts whose subject shares a word (by stem) with the query."""
    context.beat()  # long-running tools check in: past the deadline this fails the call
    words = {stem(t) for t in tokens(params.q)}
    found = [f for f in ALMANAC if {stem(t) for t in tokens(f.subject)} & words]
    return ToolResult.ok(AlmanacResult(facts=tuple(found[: params.lim])),
                         f"{len(found)} almanac facts")


# 4. The tool: a name (^[a-z0-9_][a-z0-9_.-]{0,63}$), a description, the models, the handler and
#    examples, which are validated against the models when the registry is built.
ALMANAC_TOOL: Tool[AlmanacParams, AlmanacResult] = Tool(
    name="almanac",
    description="Look up facts about planets in a small almanac.",
    params=AlmanacParams,
    result=AlmanacResult,
    handler=handle,
    examples=(ToolExample(description="Jupiter's rings.",
                          input=AlmanacParams(q="Jupiter ring system"),
                          output=AlmanacResult(facts=(ALMANAC[0],))),),
)


def main(db: str | None = None, *, bind: bool = True) -> Revision:
    """Verify the claim with the almanac registered and (if ``bind``) bound to RETRIEVAL."""
    # 5. Register it next to the built-in tools and bind it to the state that calls it.
    config = EngineConfig(extra_tools=[ALMANAC_TOOL],
                          bind={"RETRIEVAL": ["almanac"]} if bind else None)
    with Engine.open(db, config=config) as engine:
        head = engine.driver.start("Jupiter has a ring system.")
        return engine.driver.run(head.sid)


if __name__ == "__main__":
    for bound in (False, True):
        final = main(bind=bound)
        label = (final.state.verdict or {}).get("label")
        used = sorted({s["tool"] for s in final.state.steps})
        print(f"almanac bound: {bound!s:5}  verdict: {label}  tools: {', '.join(used)}")
