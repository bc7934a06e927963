"""The shortcuts issue 27 took for claims per second compute exactly what the plain
forms compute: term coverage by index vs a scan of every token, the cached analysis and
sentence terms vs fresh ones, the huge-integer check's JSON prefilter vs the walk, and
the executor's copies of policy state vs the state itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from claimfsm.skills.base import _huge_int
from claimfsm.skills.context import FixedClock
from claimfsm.skills.limits import MAX_INT
from claimfsm.skills.stance import features
from claimfsm.skills.stance.features import Coverage, analyze, claim_terms, coverage
from claimfsm.skills.tools import sentences
from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.policies import PolicyDecision
from claimfsm.skills.tools.registry import ToolRegistry

DATA = Path(__file__).resolve().parents[1] / "data"


def _texts() -> list[str]:
    out = []
    for line in (DATA / "eval_corpus.jsonl").read_text().splitlines():
        out.append(json.loads(line)["text"])
    for line in (DATA / "eval_dataset.jsonl").read_text().splitlines():
        out.append(json.loads(line)["claim"])
    # Extensions, antonyms, direction words and numbered names, which the index finds
    # through its prefix, antonym and direction tables.
    out += ["Australian temperatures rose sharply while Australia's rainfall decreased.",
            "Temperatures in Australia fell; the decline was not sudden.",
            "Apollo 13 did not land on the Moon, but Apollo 11 landed in 1969.",
            "Global warming increases the frequency of heatwaves and lowers ice cover."]
    return out


def _scanned(terms: tuple[features.ClaimTerm, ...], sent: features.Analysis) -> Coverage:
    covered, missing, positions = [], [], set()
    for ct in terms:
        hits = [i for i, tok in enumerate(sent.tokens) if features._matches(ct.term, tok)]
        (covered if hits else missing).append(ct)
        positions.update(hits)
    return Coverage(tuple(covered), tuple(missing), frozenset(positions))


def test_coverage_by_index_equals_a_scan_of_every_token() -> None:
    texts = _texts()
    pairs = 0
    for claim in texts:
        terms = claim_terms(analyze(claim))
        for sentence in texts:
            sent = analyze(sentence)
            assert coverage(terms, sent) == _scanned(terms, sent), (claim, sentence)
            pairs += 1
    assert pairs > 300


def test_cached_analysis_equals_a_fresh_one() -> None:
    text = "Arctic sea ice has declined by 13% per decade since 1979, but not in 2012."
    cached = analyze(text)
    assert analyze(text) is cached
    fresh = analyze.__wrapped__(text)
    assert fresh == cached and fresh is not cached
    assert claim_terms(fresh) == claim_terms(cached)
    assert fresh.terms == frozenset(t.term for t in fresh.tokens)


def test_cached_sentence_terms_are_a_new_list_each_time() -> None:
    text = "Temperatures rose by 1.5 degrees, and 10,000 glaciers retreated."
    first = sentences.terms(text)
    assert first == [sentences._norm.__wrapped__(t) for t in sentences.tokens(text)]
    first.append("edited")
    assert sentences.terms(text) == first[:-1]


@pytest.mark.parametrize("value,where", [
    ({"a": [1, 2, {"b": MAX_INT}]}, None),
    ({"a": [1, 2, {"b": MAX_INT + 1}]}, "a.2.b"),
    ({"a": -MAX_INT - 1}, "a"),
    ({"a": "9" * 40, "b": 10**15}, None),  # a long digit run in a string: walked, fine
    ({"a": 1.5e300, "b": [12345678901234567.0]}, None),  # floats are not integers
    ({"a": 2**70}, "a"),  # beyond what orjson writes: walked
])
def test_the_huge_integer_prefilter_agrees_with_the_walk(value: Any, where: str | None) -> None:
    assert _huge_int(value, "") == where


class _Doc(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    doc_id: str


class _Kept:
    """A policy that keeps what it is given and tries to edit it in place."""

    name = "kept"

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def check(self, tool: Tool[Any, Any], params: BaseModel, *, state: Any) -> PolicyDecision:
        self.seen.append(state)
        if "docs" in state:
            state["docs"].append("tampered")
        return PolicyDecision.allow()

    def on_result(self, tool: Tool[Any, Any], params: BaseModel, value: BaseModel, *,
                  state: Any) -> dict[str, Any]:
        docs = list(state.get("docs", []))
        if "docs" in state:
            state["docs"].append("tampered too")
        assert isinstance(params, _Doc)
        return {"docs": [*docs, params.doc_id]}


def test_policies_and_tools_get_copies_of_the_policy_state() -> None:
    views: list[Any] = []

    def fetch(params: _Doc, *, context: ToolContext) -> ToolResult[_Doc]:
        views.append(context.session["policy"])
        context.session["policy"].setdefault("kept", {})["docs"] = ["tool edit"]
        return ToolResult.ok(_Doc(doc_id=params.doc_id))

    policy = _Kept()
    ex = Executor(ToolRegistry([Tool(name="fetch", description="fetch", params=_Doc,
                                     result=_Doc, handler=fetch)]),
                  clock=FixedClock(), policies=[policy])
    for doc in ("a", "b", "c"):
        assert ex.call("fetch", {"doc_id": doc}).ok
    assert ex.policy_state == {"kept": {"docs": ["a", "b", "c"]}}
    assert ex.runtime_state()["policy"] == ex.policy_state
    assert ex.runtime_state()["policy"] is not ex.policy_state
    assert all(v is not ex.policy_state for v in views)
