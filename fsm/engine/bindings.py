"""How each bound skill meets the session state: state -> input, and ``d`` -> state.

Skills never see or write :class:`SessionState`; the driver calls ``to_input(state, st)``
to build a skill's input and ``apply(state, d, to)`` to fold the skill's output (``d``
without ``sp``) back in, ``to`` being the FSM state the step moves to (``sp.fsm``).
A custom machine supplies its own bindings (see :func:`memory_binding`).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from claimfsm._base.record import Record
from claimfsm.engine.model_profile import model_input
from claimfsm.engine.settings import SessionSettings
from claimfsm.skills.base import Skill
from claimfsm.state.model import SessionState

__all__ = [
    "BINDABLE",
    "DEFAULT_BINDINGS",
    "Binding",
    "flatten_facts",
    "flatten_hits",
    "make_bindings",
    "memory_binding",
]

ToInput = Callable[[SessionState, dict[str, Any]], dict[str, Any]]
Apply = Callable[[SessionState, dict[str, Any], str], SessionState]
Build = Callable[[dict[str, Any]], Any]
Patch = Callable[[SessionState, dict[str, Any], str], dict[str, Any]]
Route = Callable[[SessionState, dict[str, Any], str], str]


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class Binding(Record, frozen=True):
    """A skill plus the two mappings between it and the session state.

    ``build`` (optional) makes the skill's input model from ``to_input``'s dict without
    validating it, for bindings whose input holds only values of the (already valid)
    state and the engine's ``st``; without it the skill validates its input as usual.

    ``patch`` (optional) is ``apply`` as the fields it changes (``{field: value}``, each
    value already valid): the driver then builds the step's one new state from the
    parent, the patch and its own fields, instead of a state from ``apply`` and a copy
    of it. With a patch, ``apply(state, d, to)`` must equal the state with those fields.

    ``route`` (optional) may send an ok step elsewhere than its ``sp.fsm``, from the
    session's config and the step's ``d`` (AGGREGATE's to REVIEW, per the profile's
    ``review``); the driver commits the routed move, which must be a declared one.
    """

    skill: Skill[Any, Any]
    to_input: ToInput
    apply: Apply
    build: Build | None = None
    patch: Patch | None = None
    route: Route | None = None

    def __init__(self, skill: Skill[Any, Any], to_input: ToInput, apply: Apply,
                 build: Build | None = None, patch: Patch | None = None,
                 route: Route | None = None) -> None:
        self._fill(skill=skill, to_input=to_input, apply=apply, build=build, patch=patch,
                   route=route)


def memory_binding(skill: Skill[Any, Any]) -> Binding:
    """A generic binding for custom machines: input ``{memory, st}``; ``d`` merges into memory."""

    def to_input(state: SessionState, st: dict[str, Any]) -> dict[str, Any]:
        return {"memory": dict(state.memory), "st": st}

    def apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
        return state.model_copy(update={"memory": {**state.memory, **d}})

    return Binding(skill, to_input, apply)


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


def _retrieve_in_with(bound: Sequence[str]) -> ToInput:
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


#: Skills that take tools bound to their state (the tools get one request per query).
BINDABLE: frozenset[str] = frozenset({"retrieve"})


def make_bindings(tools: Mapping[str, Sequence[str]] | None = None) -> Mapping[str, Binding]:
    """Bindings of the claim-verification machine, keyed by skill name.

    ``tools`` maps a skill name to extra tools bound to it; only ``retrieve`` (RETRIEVAL)
    takes them, and each gets one request per planned query. Anything else is a
    :class:`ToolDefinitionError` naming the skill.
    """
    bound = dict(tools or {})
    for skill, names in bound.items():
        if skill not in BINDABLE and names:
            from claimfsm.skills.tools.core import ToolDefinitionError

            raise ToolDefinitionError(
                str(next(iter(names))), f"skill {skill!r} takes no bound tools "
                f"(bind tools to: {', '.join(sorted(BINDABLE))})",
            )
    return _Bindings({
        "parse_claim": (_parse_in, _parse_apply),
        "retrieve": (_retrieve_in_with(tuple(bound.get("retrieve", ()))), _retrieve_apply),
        "evidence_extract": (_extract_in, _extract_apply),
        "stance_judge": (_verify_in, _verify_apply),
        "verdict_aggregate": (_aggregate_in, _aggregate_apply, _aggregate_route),
    })


#: Skills a profile may back with a model: their module runs the deterministic skill
#: unless the input names a model (claimfsm.engine.model_profile).
_MODEL_BACKED: Mapping[str, str] = {"parse_claim": "model_planner",
                                    "stance_judge": "model_judge"}


class _Bindings(Mapping[str, Binding]):
    """The claim-verification bindings, each skill's module imported when its binding is
    first used: a command that steps one session imports one skill, not all of them
    (the module of skill ``name`` is ``skills.<name>``, or its model-backed module of
    ``_MODEL_BACKED``; its skill ``SKILL``).
    """

    def __init__(self, table: Mapping[str, tuple[Any, ...]]) -> None:
        self._table = dict(table)
        self._made: dict[str, Binding] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Binding:
        made = self._made.get(name)
        if made is not None:
            return made
        to_input, apply, *route = self._table[name]  # KeyError for a skill it does not bind
        module = _MODEL_BACKED.get(name, name)
        skill = importlib.import_module(f"claimfsm.skills.{module}").SKILL
        made = Binding(skill, to_input, apply, route=route[0] if route else None)
        with self._lock:
            return self._made.setdefault(name, made)

    def __contains__(self, name: object) -> bool:
        return name in self._table  # without importing the skill (Mapping's would)

    def declared(self, name: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """``(version, file digests)`` skill ``name`` declares, without importing it (a
        machine's version is known before any skill runs)."""
        from claimfsm.skills.versions import declared

        return declared(name)

    def __reduce__(self) -> tuple[Any, ...]:  # pickles as its table (the lock does not)
        return (_Bindings, (self._table,))

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


#: Bindings of the claim-verification machine, keyed by skill name.
DEFAULT_BINDINGS: Mapping[str, Binding] = make_bindings()
