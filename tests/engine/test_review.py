"""The claim machine's REVIEW: when a verdict is reviewed (never, low_confidence with its
threshold, always), the three decision shapes exactly, what each decision does to the
verdict and its provenance, and a send-back that fetches the documents it names."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from claimfsm.engine.bindings import flatten_hits
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.profile import Profile
from claimfsm.engine.review import LOW_CONFIDENCE, ReviewInput, needs_review, provenance
from claimfsm.engine.runtime import Engine

SURE = [{"id": "s1", "verdict": "SUPPORTS", "confidence": 0.9}]
UNSURE = [{"id": "s1", "verdict": "SUPPORTS", "confidence": LOW_CONFIDENCE - 0.01}]


@pytest.mark.parametrize(("mode", "label", "judgments", "reviewed"), [
    ("never", "NOT_ENOUGH_INFO", UNSURE, False),
    ("always", "SUPPORTS", SURE, True),
    ("low_confidence", "SUPPORTS", SURE, False),
    ("low_confidence", "SUPPORTS", UNSURE, True),
    ("low_confidence", "NOT_ENOUGH_INFO", SURE, True),
    ("low_confidence", "DISPUTED", SURE, True),
    ("low_confidence", "REFUTES", [{"id": "s1", "confidence": LOW_CONFIDENCE}], False),
])
def test_when_a_verdict_is_reviewed(mode: str, label: str, judgments: list[dict[str, Any]],
                                    reviewed: bool) -> None:
    assert needs_review(mode, {"label": label}, judgments) is reviewed


@pytest.mark.parametrize("payload", [
    {"decision": "approve"},
    {"decision": "override", "verdict": "DISPUTED", "reason": "r"},
    {"decision": "send_back", "queries": ["q"], "reason": "r"},
    {"decision": "send_back", "doc_ids": ["d"], "queries": [], "reason": "r"},
])
def test_the_three_shapes_are_accepted(payload: dict[str, Any]) -> None:
    assert ReviewInput.model_validate(payload).decision == payload["decision"]


@pytest.mark.parametrize(("payload", "fragment"), [
    ({"decision": "approve", "reason": "r"}, "reason: not taken by decision 'approve'"),
    ({"decision": "override", "verdict": "SUPPORTS"}, "reason: required"),
    ({"decision": "override", "reason": "r"}, "verdict: required"),
    ({"decision": "override", "verdict": "MAYBE", "reason": "r"}, "verdict"),
    ({"decision": "override", "verdict": "SUPPORTS", "reason": ""}, "reason"),
    ({"decision": "send_back", "reason": "r"}, "queries: send_back needs"),
    ({"decision": "send_back", "queries": ["q"], "reason": "r", "x": 1}, "x"),
    ({"decision": "publish"}, "decision"),
])
def test_anything_else_is_refused_naming_the_field(payload: dict[str, Any],
                                                   fragment: str) -> None:
    with pytest.raises(ValidationError) as exc:
        ReviewInput.model_validate(payload)
    assert fragment in str(exc.value)


def test_provenance_is_the_engine_unless_a_reviewer_decided() -> None:
    assert provenance(None) is None and provenance({"label": "SUPPORTS"}) == "engine"
    assert provenance({"label": "SUPPORTS", "provenance": "reviewer:ann"}) == "reviewer:ann"


def test_send_back_fetches_the_named_document_and_approve_keeps_the_verdict() -> None:
    profile = Profile(review="always")
    with Engine.open(None, config=EngineConfig(profile=profile)) as eng:
        d = eng.driver
        sid = eng.start("The Eiffel Tower is in Paris").sid
        first = d.run(sid)
        assert first.fsm == "REVIEW" and first.state.verdict is not None
        back = d.input(sid, {"decision": "send_back", "doc_ids": ["apollo-11"],
                             "reason": "read the Apollo page"}, actor="ann")
        assert back.fsm == "RETRIEVAL" and back.state.verdict is None
        fetches = [r for r in back.state.tool_requests if r["tool"] == "page_fetch"]
        assert fetches == [{"id": fetches[0]["id"], "tool": "page_fetch",
                            "args": {"doc_id": "apollo-11"}, "for": "s1"}]
        again = d.run(sid)
        assert again.fsm == "REVIEW"  # verified again, and reviewed again
        fetched = [r for r in again.state.tool_results if r["tool"] == "page_fetch"]
        assert [(r["ok"], r["value"]["doc_id"]) for r in fetched] == [(True, "apollo-11")]
        # EXTRACT reads it as a hit of the subclaim (its sentences are ranked there).
        assert {"for": "s1", "doc_id": "apollo-11"}.items() <= flatten_hits(again.state)[-1].items()
        label = again.state.verdict["label"]  # type: ignore[index]
        done = d.input(sid, {"decision": "approve"}, actor="bob")
        assert done.fsm == "DONE" and done.state.verdict is not None
        assert done.state.verdict["label"] == label
        assert done.state.verdict["provenance"] == "reviewer:bob"
