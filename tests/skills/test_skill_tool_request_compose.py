"""The Tool Request Composer (seed 000): example I/O, routing, ids, failures, properties."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claimfsm.skills import evidence_query_plan
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.tool_request_compose import SKILL, PlanIn, compose

SEED_IN = (
    b'{"plans":[{"id":"s1","q":["NASA Moon landing 1969"],"src":["wiki","web"],"lim":4}],'
    b'"st":{"sid":"A1","rev":6,"fsm":"RETRIEVAL"}}'
)
SEED_OUT = (
    b'{"s":"ok","d":{"tr":[{"id":"t1","tool":"search","args":{"q":"NASA Moon landing 1969",'
    b'"lim":4,"src":"wiki"},"for":"s1"}],"sp":{"rev":7,"fsm":"RETRIEVAL"}},"e":null,'
    b'"rb":"none"}'
)
ST = {"sid": "S", "rev": 10, "fsm": "RETRIEVAL"}


def plan(pid: str, q: list[str], src: list[str], lim: int = 4) -> dict[str, Any]:
    return {"id": pid, "q": q, "src": src, "lim": lim}


def run(*plans: dict[str, Any]) -> Envelope:
    return SKILL.run({"plans": list(plans), "st": ST}, SkillContext())


def requests(*plans: dict[str, Any]) -> list[dict[str, Any]]:
    env = run(*plans)
    assert env.s == "ok", env.e
    assert env.d is not None
    tr: list[dict[str, Any]] = env.d["tr"]
    return tr


def test_seed_example_is_reproduced_byte_for_byte() -> None:
    assert SKILL.run(SEED_IN, SkillContext()).to_json() == SEED_OUT


def test_identical_input_gives_identical_bytes() -> None:
    assert SKILL.run(SEED_IN, SkillContext()).to_json() == SKILL.run(
        SEED_IN, SkillContext()
    ).to_json()


def test_state_patch_increments_rev_and_stays_in_retrieval() -> None:
    env = run(plan("s1", ["a b"], ["web"]))
    assert env.sp is not None and (env.sp.rev, env.sp.fsm) == (11, "RETRIEVAL")
    assert env.d is not None and list(env.d) == ["tr", "sp"]


def test_one_request_per_query_never_merged_ids_in_plan_then_query_order() -> None:
    tr = requests(
        plan("s1", ["Lost (TV series)", "Lost (film)"], ["wiki", "web"], 3),
        plan("s2", ["Paris France capital"], ["kb"], 3),
        plan("s3", ["Fed  rates 2024", "Fed raising"], ["news", "web"], 5),
    )
    assert [r["id"] for r in tr] == ["t1", "t2", "t3", "t4", "t5"]
    assert [r["for"] for r in tr] == ["s1", "s1", "s2", "s3", "s3"]
    # The planned query exactly: spacing, case and parentheses untouched.
    assert [r["args"]["q"] for r in tr] == [
        "Lost (TV series)", "Lost (film)", "Paris France capital", "Fed  rates 2024",
        "Fed raising",
    ]
    assert [r["args"]["lim"] for r in tr] == [3, 3, 3, 5, 5]


def test_request_key_order_is_the_wire_order() -> None:
    (req,) = requests(plan("s1", ["q"], ["web"]))
    assert list(req) == ["id", "tool", "args", "for"]
    assert list(req["args"]) == ["q", "lim", "src"]


def test_kb_lookup_only_when_sources_are_exactly_kb() -> None:
    (req,) = requests(plan("s1", ["Paris France capital"], ["kb"], 3))
    assert req["tool"] == "kb_lookup"
    assert req["args"] == {"q": "Paris France capital", "lim": 3, "src": "kb"}
    (req,) = requests(plan("s1", ["Paris France capital"], ["kb", "wiki"], 3))
    assert (req["tool"], req["args"]["src"]) == ("search", "wiki")


@pytest.mark.parametrize(
    ("src", "chosen"),
    [
        (["wiki", "web"], "wiki"),
        (["web", "wiki"], "wiki"),
        (["news", "web"], "web"),
        (["news"], "news"),
        (["kb", "news"], "news"),
        (["news", "kb", "web"], "web"),
        (["web"], "web"),
    ],
)
def test_search_source_prefers_wiki_then_web_then_news(src: list[str], chosen: str) -> None:
    (req,) = requests(plan("s1", ["q"], src))
    assert (req["tool"], req["args"]["src"]) == ("search", chosen)


def test_empty_plans_is_no_plans() -> None:
    env = run()
    assert (env.s, env.rb, env.d) == ("error", "tools", None)
    assert env.e is not None and env.e.code == "NO_PLANS" and "plans" in env.e.msg


@pytest.mark.parametrize(
    ("src", "where"), [(["wiki", "blog"], "plans.1.src.1"), ([], "plans.1.src")]
)
def test_unsupported_source_is_bad_src_naming_the_field(src: list[str], where: str) -> None:
    env = run(plan("s1", ["q"], ["wiki"]), plan("s2", ["q"], src))
    assert (env.s, env.rb) == ("error", "tools")
    assert env.e is not None and env.e.code == "BAD_SRC"
    assert where in env.e.msg


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"id": "s1", "q": ["x"], "src": ["wiki"]}, "plans.0.lim"),
        ({"id": "s1", "q": [], "src": ["wiki"], "lim": 4}, "plans.0.q"),
        ({"id": "s1", "q": [""], "src": ["wiki"], "lim": 4}, "plans.0.q.0"),
        ({"id": "s1", "q": ["x"], "src": "wiki", "lim": 4}, "plans.0.src"),
    ],
)
def test_schema_violations_are_bad_input_naming_the_field(
    bad: dict[str, Any], field: str
) -> None:
    env = run(bad)
    assert env.e is not None and env.e.code == "BAD_INPUT"
    assert field in env.e.msg
    composed = compose([bad])  # the pure function validates mappings the same way
    assert isinstance(composed, Envelope) and composed.e is not None
    assert composed.e.code == "BAD_INPUT" and field in composed.e.msg


def test_compose_is_pure_and_accepts_models_or_mappings() -> None:
    as_dicts = compose([plan("a", ["x", "y"], ["kb"], 3)])
    as_models = compose([PlanIn(id="a", q=["x", "y"], src=["kb"], lim=3)])
    assert as_dicts == as_models
    assert as_dicts == [
        {"id": "t1", "tool": "kb_lookup", "args": {"q": "x", "lim": 3, "src": "kb"},
         "for": "a"},
        {"id": "t2", "tool": "kb_lookup", "args": {"q": "y", "lim": 3, "src": "kb"},
         "for": "a"},
    ]
    err = compose([])
    assert isinstance(err, Envelope) and err.e is not None and err.e.code == "NO_PLANS"


def test_planner_output_composes_directly() -> None:
    planned = evidence_query_plan.SKILL.run(
        {"claims": [{"id": "s1", "c": "Lost won an Emmy."},
                    {"id": "s2", "c": "Paris is the capital of France."}],
         "st": {"sid": "S", "rev": 0, "fsm": "PARSE_CLAIM"}},
        SkillContext(clock=FixedClock(current=datetime(2026, 1, 1, tzinfo=UTC))),
    )
    assert planned.d is not None
    plans = planned.d["plans"]
    tr = requests(*plans)
    assert [r["args"]["q"] for r in tr] == [q for p in plans for q in p["q"]]
    assert tr[-1]["tool"] == "kb_lookup" and tr[0]["tool"] == "search"


_plans = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.text(min_size=1, max_size=4),
            "q": st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4),
            "src": st.lists(st.sampled_from(["wiki", "web", "news", "kb"]), min_size=1,
                            max_size=4),
            "lim": st.integers(min_value=1, max_value=10),
        }
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(_plans)
def test_property_never_merges_and_numbers_ids(plans: list[dict[str, Any]]) -> None:
    tr = requests(*plans)
    flat = [(p["id"], q, p) for p in plans for q in p["q"]]
    assert len(tr) == len(flat)
    assert [r["id"] for r in tr] == [f"t{i}" for i in range(1, len(flat) + 1)]
    for req, (pid, q, p) in zip(tr, flat, strict=True):
        assert (req["for"], req["args"]["q"], req["args"]["lim"]) == (pid, q, p["lim"])
        if set(p["src"]) == {"kb"}:
            assert (req["tool"], req["args"]["src"]) == ("kb_lookup", "kb")
        else:
            assert req["tool"] == "search"
            assert req["args"]["src"] == next(
                s for s in ("wiki", "web", "news") if s in p["src"]
            )


def test_card_example_matches_the_skill() -> None:
    card = Path(__file__).resolve().parents[2] / "skills" / "cards" / "tool_request_compose.md"
    blocks = re.findall(r"```json\n(.*?)\n```", card.read_text(encoding="utf-8"), re.S)
    example_in, example_out = blocks[-2:]
    env = SKILL.run(example_in.encode(), SkillContext())
    assert orjson.loads(env.to_json()) == orjson.loads(example_out)
