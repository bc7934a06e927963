"""The claim-verification machine's side of its bindings: for each of its five skills,
how the skill's input is read from the session state and how its ``d`` is folded back
(and where AGGREGATE's ok step is routed).

Its own module because these are the default machine's mappings, one pair per skill,
while :mod:`claimfsm.engine.bindings` is the binding contract every machine uses (the
:class:`~claimfsm.engine.bindings.Binding` value, the generic memory binding, the lazily
imported default table). The driver calls these functions at every step, through the
binding: they live together so each reads its helpers as this module's globals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from claimfsm.engine.model_profile import model_input
from claimfsm.engine.settings import SessionSettings
from claimfsm.state.model import SessionState

__all__ = ["flatten_facts", "flatten_hits", "skill_table"]


def skill_table(retrieve_tools: Sequence[str] = ()) -> dict[str, tuple[Any, ...]]:
    """``skill name -> (to_input, apply[, route])`` of the claim-verification machine,
    with ``retrieve_tools`` bound to RETRIEVAL's skill."""
    return {
        "parse_claim": (_parse_in, _parse_apply),
        "retrieve": (_retrieve_in_with(tuple(retrieve_tools)), _retrieve_apply),
        "evidence_extract": (_extract_in, _extract_apply),
        "stance_judge": (_verify_in, _verify_apply),
        "verdict_aggregate": (_aggregate_in, _aggregate_apply, _aggregate_route),
    }


def _found(state: SessionState, key: str) -> list[tuple[str, dict[str, Any]]]:
    """``(subclaim, item)`` for every item under ``value[key]`` of every successful call."""
    return [(rec["for"], item) for rec in state.tool_results if rec.get("ok")
            for item in (rec.get("value") or {}).get(key, [])]


def flatten_hits(state: SessionState) -> list[dict[str, Any]]:
    """Every search hit of every successful call, in request order, tagged with its
    subclaim; then every document a reviewer sent back for (``page_fetch`` in RETRIEVAL)."""
    hits = [{"for": sid, "doc_id": hit["doc_id"], "title": hit.get("title", ""),
             "source": hit.get("source", ""), "score": hit.get("score", 0.0)}
            for sid, hit in _found(state, "hits")]
    for rec in state.tool_results:
        value = rec.get("value")
        if rec.get("ok") and rec.get("tool") == "page_fetch" and isinstance(value, dict):
            hits.append({"for": rec["for"], "doc_id": value["doc_id"],
                         "title": value.get("title", ""), "source": value.get("source", ""),
                         "score": 1.0})
    return hits


def flatten_facts(state: SessionState) -> list[dict[str, Any]]:
    """Every knowledge-base fact found, tagged with its subclaim."""
    return [{"for": sid, **fact} for sid, fact in _found(state, "facts")]


def _claims(state: SessionState) -> list[dict[str, Any]]:
    return [{"id": c["id"], "c": c["c"]} for c in state.subclaims]


def _parse_in(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
    out = {"claim": state.claim, "st": st, "hints": SessionSettings.of(state.config).hints}
    model = model_input(state.config, "planner")
    return out if model is None else {**out, "model": model}


def _parse_apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
    return state.model_copy(update={"subclaims": d["claims"], "plans": d["plans"]})


def _retrieve_in_with(
        bound: Sequence[str]) -> Callable[[SessionState, dict[str, Any]], dict[str, Any]]:
    def to_input(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
        # Only the outputs a pending step's done_check may need: the input stays small.
        wanted = {s["expected_key"] for s in state.steps if s.get("status") == "pending"}
        settings = SessionSettings.of(state.config)
        return {
            "claims": _claims(state),
            "plans": state.plans,
            "tr": state.tool_requests,
            "results": state.tool_results,
            "followups": state.followups,
            "missing": state.memory.get("missing", []),
            "round": state.rounds,
            "batch": settings.batch,
            "steps": state.steps,
            "outputs": {k: v for k, v in state.outputs.items() if k in wanted},
            "bound": list(bound),
            # Optional session config: size of the claim-level request (0: none).
            **({} if settings.claim_lim is None else {"claim_lim": settings.claim_lim}),
            "st": st,
        }

    return to_input


def _finish_steps(
    state: SessionState, steps: list[dict[str, Any]], d: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Fold RETRIEVAL's step updates into the plan, and completed results into outputs."""
    from claimfsm.skills.plan_steps import extract

    updates = {u["id"]: u for u in d.get("steps", [])}
    values = {r["id"]: r.get("value") for r in d.get("results", [])}
    outputs = dict(state.outputs)
    out: list[dict[str, Any]] = []
    for step in steps:
        upd = updates.get(step["id"])
        if upd is not None:
            step = {**step, "status": upd["status"], "completed_rev": upd["rev"],
                    "code": upd.get("code")}
            if upd["status"] == "completed":
                outputs[step["expected_key"]] = extract(values.get(step["id"]),
                                                        step.get("output_path"))
        out.append(step)
    return out, outputs


def _retrieve_apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
    from claimfsm.skills.plan_steps import PlanStep, steps_for

    update: dict[str, Any] = {}
    steps = state.steps
    if "tr" in d:
        update["tool_requests"] = [*state.tool_requests, *d["tr"]]
        known = [PlanStep.model_validate(s) for s in steps]
        reasons = {f["id"]: f["reason"] for f in d.get("followups", [])}
        steps = [*steps, *(s.dump() for s in steps_for(d["tr"], known, reasons=reasons))]
        update["steps"] = steps
    if "results" in d:
        update["tool_results"] = [*state.tool_results, *d["results"]]
    if "steps" in d:
        update["steps"], update["outputs"] = _finish_steps(state, steps, d)
    if "followups" in d:
        update["followups"] = [*state.followups, *d["followups"]]
    if "coverage" in d:
        update["memory"] = {**state.memory, "coverage": d["coverage"]}
    return state.model_copy(update=update)


def _extract_in(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
    settings = SessionSettings.of(state.config)
    return {
        "claims": _claims(state),
        "hits": flatten_hits(state),
        "facts": flatten_facts(state),
        "round": state.rounds,
        "max_rounds": settings.max_rounds,
        # Optional session config: how many hits EXTRACT reads and sentences it keeps.
        **settings.extract_input(),
        # A learned profile's evidence reranker reads the claim; without a model the
        # input stays as it was (recorded sessions replay unchanged).
        **({"claim": state.claim, "stance_model": settings.stance_model}
           if settings.stance_model is not None else {}),
        "st": st,
    }


def _extract_apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
    update: dict[str, Any] = {
        "evidence": d["evidence"],
        "memory": {**state.memory, "missing": list(d.get("missing", []))},
    }
    if to == "RETRIEVAL":  # the one bounded follow-up round: count it, so it stays bounded
        update["rounds"] = state.rounds + 1
    return state.model_copy(update=update)


def _verify_in(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
    judge = SessionSettings.of(state.config).judge_input()
    model = model_input(state.config, "judge")
    return {"claims": _claims(state), "evidence": state.evidence, **judge, "st": st,
            **({} if model is None else {"model": model})}


def _verify_apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
    return state.model_copy(update={"judgments": d["judgments"]})


def _aggregate_in(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
    settings = SessionSettings.of(state.config)
    # A learned model's claim-level head reads the claim and its evidence; without a model
    # the input stays as it was (recorded sessions replay unchanged).
    head = ({"claim": state.claim, "evidence": state.evidence}
            if settings.stance_model is not None else {})
    return {"claims": _claims(state), "judgments": state.judgments,
            **settings.judge_input(), **head, "st": st}


def _aggregate_apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
    return state.model_copy(update={"verdict": d["verdict"]})


def _aggregate_route(state: SessionState, d: dict[str, Any], to: str) -> str:
    profile = state.config.get("profile")
    mode = profile.get("review", "never") if isinstance(profile, dict) else "never"
    if to != "DONE" or mode == "never":  # the default: nothing read, nothing changed
        return to
    from claimfsm.engine.review import needs_review

    return "REVIEW" if needs_review(mode, d.get("verdict"), state.judgments) else to
