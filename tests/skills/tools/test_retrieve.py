"""RETRIEVAL (``skills/retrieve.py``): compose, plan steps, follow-ups, as a skill and in a
session."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.skills import tool_request_compose
from claimfsm.skills.context import FixedClock, SkillContext, ToolCall
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.retrieve import SKILL
from claimfsm.skills.tools.builtin import builtin_tools
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.index import EvidenceIndex
from claimfsm.skills.tools.registry import ToolRegistry

ST = {"sid": "A1", "rev": 6, "fsm": "RETRIEVAL"}
CLAIMS = [{"id": "s1", "c": "The Eiffel Tower is in Berlin."}]
PLANS = [{"id": "s1", "q": ["Eiffel Tower Berlin"], "src": ["wiki", "web"], "lim": 4}]


class Answers:
    """A tool caller that answers every call with ``value`` (or fails) and records it."""

    def __init__(self, value: dict[str, Any] | None = None, code: str | None = None) -> None:
        self.value, self.code = value, code
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def call(self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
             key: str | None = None) -> ToolCall:
        self.calls.append((tool, dict(args)))
        ok = self.code is None
        return ToolCall(id=call_id or "x", tool=tool, args=dict(args), ok=ok,
                        value=self.value if ok else None, code=self.code,
                        message="" if ok else "failed", key=key)


@pytest.fixture(scope="module")
def executor() -> Executor:
    return Executor(ToolRegistry(builtin_tools(EvidenceIndex.open(":memory:"))),
                    clock=FixedClock())


def run(tools: Any = None, **inp: Any) -> Envelope:
    base: dict[str, Any] = {"claims": CLAIMS, "plans": PLANS, "st": ST}
    return SKILL.run({**base, **inp}, SkillContext(tools=tools))


def test_the_compose_step_keeps_the_seed_000_envelope() -> None:
    seed = tool_request_compose.SKILL.run({"plans": PLANS, "st": ST}, SkillContext())
    assert run().to_json() == seed.to_json()
    assert run(Answers()).to_json() == seed.to_json()


def test_bound_tools_get_one_request_per_query_after_the_seed_requests() -> None:
    env = run(bound=["web_search"])
    assert env.d is not None
    assert [(r["id"], r["tool"]) for r in env.d["tr"]] == [("t1", "search"), ("t2", "web_search")]
    assert env.d["tr"][1]["args"] == {"q": "Eiffel Tower Berlin", "lim": 4}


def test_an_unknown_bound_tool_fails_before_anything_runs(executor: Executor) -> None:
    before = len(executor.calls)
    env = run(executor, bound=["corp"])
    assert env.s == "error" and env.e is not None and env.e.code == "UNKNOWN_TOOL"
    assert "known tools: search" in env.e.msg and env.rb == "tools"
    assert len(executor.calls) == before


def test_pending_steps_are_validated_before_any_runs(executor: Executor) -> None:
    tr = [{"id": "t1", "tool": "search", "args": {"q": "a", "lim": 4, "src": "wiki"},
           "for": "s1"},
          {"id": "t2", "tool": "search", "args": {"q": "b", "lim": 4, "src": "kb"},
           "for": "s1"}]
    before = len(executor.calls)
    env = run(executor, tr=tr)
    assert env.e is not None and env.e.code == "QUERY_TYPE_UNSUPPORTED"
    assert env.e.msg.startswith("t2 (search): tr.t2.args.src: query type 'kb'")
    assert "supported types: wiki, web, news" in env.e.msg
    assert len(executor.calls) == before  # t1 is fine, but nothing ran


def test_one_pending_step_runs_per_step_and_reports_its_status() -> None:
    tools = Answers({"hits": []})
    tr = [{"id": "t1", "tool": "search", "args": {"q": "a", "lim": 4, "src": "wiki"},
           "for": "s1"},
          {"id": "t2", "tool": "kb_lookup", "args": {"q": "a", "lim": 4, "src": "kb"},
           "for": "s1"}]
    env = run(tools, tr=tr)
    assert env.d is not None and env.sp is not None and env.sp.fsm == "RETRIEVAL"
    assert [r["id"] for r in env.d["results"]] == ["t1"]
    assert env.d["steps"] == [{"id": "t1", "status": "completed", "rev": 7}]
    assert tools.calls == [("search", {"q": "a", "lim": 4, "src": "wiki"})]
    # kb_lookup's answer lacks its output_path ("facts"): the step fails, visibly.
    env = run(tools, tr=tr, results=env.d["results"])
    assert env.d is not None
    assert env.d["steps"][0]["status"] == "failed"
    assert env.d["results"][0]["code"] == "OUTPUT_PATH_MISSING"


def _drive(tools: Answers, max_steps: int = 20) -> tuple[list[Envelope], dict[str, Any]]:
    """Run the skill as the driver would, folding each step's output back into its input."""
    inp: dict[str, Any] = {"tr": [], "results": [], "followups": []}
    envs: list[Envelope] = []
    for _ in range(max_steps):
        env = run(tools, **inp)
        envs.append(env)
        assert env.s == "ok", env.e
        assert env.d is not None and env.sp is not None
        for key in ("tr", "results", "followups"):
            inp[key] = [*inp[key], *env.d.get(key, [])]
        if env.sp.fsm == "EXTRACT":
            return envs, inp
    raise AssertionError("RETRIEVAL did not finish")


def test_follow_ups_are_injected_once_per_subclaim_and_tool_and_never_loop() -> None:
    envs, inp = _drive(Answers({"hits": []}))  # results never cover anything
    follow = inp["followups"]
    assert [(f["tool"], f["for"]) for f in follow] == [("search", "s1"), ("kb_lookup", "s1")]
    assert Counter((f["for"], f["tool"]) for f in follow).most_common(1)[0][1] == 1
    # A differently-sourced search first (wiki was tried), then the knowledge base.
    requests = {r["id"]: r for r in inp["tr"]}
    assert requests[follow[0]["id"]]["args"]["src"] == "web"
    assert requests[follow[1]["id"]]["args"]["src"] == "kb"
    for f in follow:
        assert f["missing"] == ["eiffel", "tower", "berlin"]
        assert f["reason"] == "keywords not covered by results: eiffel, tower, berlin"
    # compose, t1, follow-up, t2, follow-up, t3, then EXTRACT: bounded.
    assert len(envs) == 7


def test_no_follow_up_when_the_results_cover_every_keyword() -> None:
    hit = {"doc_id": "d", "title": "Eiffel Tower", "snippet": "It stands in Berlin? No."}
    envs, inp = _drive(Answers({"hits": [hit]}))
    assert inp["followups"] == [] and len(envs) == 3
    assert envs[-1].d is not None
    assert envs[-1].d["coverage"] == [{"id": "s1", "covered": ["eiffel", "tower", "berlin"],
                                       "missing": []}]


def test_the_round_after_extract_adds_one_web_search_per_missing_subclaim() -> None:
    done = _drive(Answers({"hits": []}))[1]
    env = run(Answers({"hits": []}), **done, round=1, missing=["s1"])
    assert env.d is not None
    assert [(r["tool"], r["args"]) for r in env.d["tr"]] == [
        ("web_search", {"q": "eiffel tower berlin", "lim": 5})]
    assert env.d["followups"][0]["round"] == 1
    again = {**done, "tr": [*done["tr"], *env.d["tr"]],
             "followups": [*done["followups"], *env.d["followups"]]}
    again["results"] = [*done["results"], {"id": env.d["tr"][0]["id"], "for": "s1",
                                           "tool": "web_search", "ok": True,
                                           "value": {"hits": []}}]
    last = run(Answers({"hits": []}), **again, round=1, missing=["s1"])
    assert last.sp is not None and last.sp.fsm == "EXTRACT"  # once per round, no loop


# -- in a session: the revisions say what was followed up and why ------------------------


def test_follow_ups_and_their_reasons_are_in_the_revisions() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        head = eng.driver.run(eng.driver.start("The Eiffel Tower is in Berlin.").sid)
        history = eng.store.history(head.sid)
    assert head.fsm == "DONE"
    injected = [r for r in history
                if r.skill == "retrieve" and r.envelope and "followups" in r.envelope["d"]]
    assert injected
    for r in injected:
        d = r.envelope["d"] if r.envelope else {}
        assert [f["id"] for f in d["followups"]] == [t["id"] for t in d["tr"]]
        assert all(f["reason"] for f in d["followups"])
    follow = head.state.followups
    keys = [(f["for"], f["tool"], f["round"]) for f in follow]
    assert len(keys) == len(set(keys))  # each tool at most once per subclaim and round
    steps = {s["id"]: s for s in head.state.steps}
    for f in follow:
        assert steps[f["id"]]["description"] == f["reason"]
        assert steps[f["id"]]["dependencies"]  # judged against the subclaim's earlier steps
