"""Every documented limit (docs/limits.md) at its edge: exactly the limit is accepted, one
more is refused with its code naming the field. The numbers come from the document, not
from the constants, so a constant off by one, or a ``>`` turned into ``>=``, fails here
(a test that only tries limit + 1 passes either way)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ConfigDict

from claimfsm.cli.main import main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.errors import InputTooLarge, check_claim
from claimfsm.engine.limits import deadline_envelope, initial_runtime
from claimfsm.engine.runtime import Engine
from claimfsm.skills import limits
from claimfsm.skills.analysis.split import split_claim
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.evidence_query_plan import MAX_TOKENS
from claimfsm.skills.registry import all_skills
from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.state.model import SessionState
from tests.support.documented import documented_limits

LIMITS = documented_limits()
ST = {"sid": "s", "rev": 0, "fsm": "PARSE_CLAIM"}


def run(name: str, raw: object) -> dict[str, Any]:
    env = all_skills()[name].run(raw, SkillContext())  # type: ignore[arg-type]
    out = orjson.loads(env.to_json())
    assert isinstance(out, dict)
    return out


def code(out: dict[str, Any]) -> str | None:
    return out["e"]["code"] if out.get("e") else None


def refused(out: dict[str, Any], field: str) -> bool:
    e = out.get("e") or {}
    return bool(e.get("code") == "INPUT_TOO_LARGE" and e["msg"].startswith(field))


def text_of(n: int) -> str:
    """``n`` characters of one plain sentence, no coordinators to split at."""
    return ("Water boils at one hundred degrees Celsius at sea level " * (n // 40 + 1))[:n]


def test_the_constants_are_the_documented_limits() -> None:
    constants = {name: getattr(limits, name, None) for name in LIMITS}
    constants["MAX_TOKENS"] = MAX_TOKENS
    assert constants == LIMITS
    assert set(LIMITS) >= {"MAX_CLAIM_CHARS", "MAX_SUBCLAIMS", "MAX_SENTENCE_CHARS",
                           "MAX_EVIDENCE_PER_CLAIM", "MAX_LIST", "MAX_INPUT_BYTES",
                           "MAX_DOC_BYTES", "MAX_TOOL_RESULT_BYTES", "MAX_TOKENS", "MAX_INT"}


# -- the claim -----------------------------------------------------------------------------


def test_a_claim_of_exactly_the_limit_starts_a_session_one_more_does_not() -> None:
    n = LIMITS["MAX_CLAIM_CHARS"]
    check_claim(text_of(n))
    with pytest.raises(InputTooLarge) as info:
        check_claim(text_of(n + 1))
    assert info.value.field == "claim" and f"the limit is {n}" in info.value.msg
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        assert eng.driver.start(text_of(n), sid="edge").state.claim == text_of(n)
        with pytest.raises(InputTooLarge):
            eng.driver.start(text_of(n + 1), sid="over")


def test_parse_claim_takes_a_claim_of_exactly_the_limit() -> None:
    n = LIMITS["MAX_CLAIM_CHARS"]
    assert code(run("parse_claim", {"claim": text_of(n), "st": ST})) is None
    assert refused(run("parse_claim", {"claim": text_of(n + 1), "st": ST}), "claim")


def _claim_of(parts: int) -> str:
    claim = " and ".join(f"NASA landed on planet {i} in 19{i:02d}" for i in range(parts))
    assert len(claim) <= LIMITS["MAX_CLAIM_CHARS"] and len(split_claim(claim)) == parts
    return claim


def test_a_claim_of_exactly_the_most_subclaims_is_parsed_one_more_is_refused() -> None:
    n = LIMITS["MAX_SUBCLAIMS"]
    out = run("parse_claim", {"claim": _claim_of(n), "st": ST})
    assert code(out) is None and len(out["d"]["claims"]) == n
    over = run("parse_claim", {"claim": _claim_of(n + 1), "st": ST})
    assert refused(over, "claim") and f"{n + 1} subclaims, the limit is {n}" in over["e"]["msg"]


@pytest.mark.parametrize("name", ["evidence_query_plan", "stance_judge", "evidence_extract"])
def test_claims_lists_take_exactly_the_most_subclaims(name: str) -> None:
    n = LIMITS["MAX_SUBCLAIMS"]

    def claims(k: int) -> list[dict[str, str]]:
        return [{"id": f"s{i}", "c": f"Water boils at {i} degrees."} for i in range(k)]

    st = {"sid": "s", "rev": 3, "fsm": "RETRIEVAL"}
    assert not refused(run(name, {"claims": claims(n), "st": st}), "claims")
    assert refused(run(name, {"claims": claims(n + 1), "st": st}), "claims")


# -- evidence and other lists ------------------------------------------------------------------


def _judge(evidence: list[dict[str, Any]]) -> dict[str, Any]:
    return run("stance_judge", {"claims": [{"id": "s1", "c": "Water boils at 100 degrees."}],
                                "evidence": {"s1": evidence},
                                "st": {"sid": "s", "rev": 4, "fsm": "VERIFY"}})


def _sentence(i: int, text: str = "Water boils at 100 degrees.") -> dict[str, Any]:
    return {"id": f"d#{i}", "doc_id": "d", "text": text, "source": "wiki", "score": 0.5}


def test_an_evidence_sentence_of_exactly_the_limit_is_judged() -> None:
    n = LIMITS["MAX_SENTENCE_CHARS"]
    assert code(_judge([_sentence(0, text_of(n))])) is None
    assert refused(_judge([_sentence(0, text_of(n + 1))]), "evidence.s1.0.text")


def test_exactly_the_most_evidence_per_subclaim_is_judged() -> None:
    n = LIMITS["MAX_EVIDENCE_PER_CLAIM"]
    assert code(_judge([_sentence(i) for i in range(n)])) is None
    assert refused(_judge([_sentence(i) for i in range(n + 1)]), "evidence.s1")


def test_exactly_the_longest_hint_list_is_taken() -> None:
    n = LIMITS["MAX_LIST"]
    hints = [f"hint {i}" for i in range(n + 1)]
    assert not refused(run("parse_claim", {"claim": "Water boils.", "hints": hints[:n],
                                           "st": ST}), "hints")
    assert refused(run("parse_claim", {"claim": "Water boils.", "hints": hints, "st": ST}),
                   "hints")


# -- raw input and numbers ------------------------------------------------------------------


def _padded(size: int) -> bytes:
    body = orjson.dumps({"claim": "Water boils at 100 degrees.", "st": ST})
    return body + b" " * (size - len(body))


def test_raw_input_of_exactly_the_limit_is_read_one_byte_more_is_refused() -> None:
    n = LIMITS["MAX_INPUT_BYTES"]
    assert code(run("parse_claim", _padded(n))) is None
    over = run("parse_claim", _padded(n + 1))
    assert refused(over, "(root)") and f"{n + 1} bytes" in over["e"]["msg"]


def test_claimfsm_skill_reads_exactly_the_limit() -> None:
    n = LIMITS["MAX_INPUT_BYTES"]
    ok = CliRunner().invoke(main, ["skill", "parse_claim"], input=_padded(n))
    assert ok.exit_code == 0 and orjson.loads(ok.output)["s"] == "ok"
    over = CliRunner().invoke(main, ["skill", "parse_claim"], input=_padded(n + 1))
    assert orjson.loads(over.output)["e"]["code"] == "INPUT_TOO_LARGE"


def test_a_revision_number_of_exactly_the_integer_limit_is_read() -> None:
    n = LIMITS["MAX_INT"]
    assert code(run("parse_claim", {"claim": "Water boils.", "st": {**ST, "rev": n - 1}})) is None
    out = run("parse_claim", {"claim": "Water boils.", "st": {**ST, "rev": n + 1}})
    assert code(out) == "BAD_INPUT" and out["e"]["msg"].startswith("st.rev")


# -- tool results, deadlines and runs ----------------------------------------------------------


class _Q(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    q: str
    lim: int = 4


class _Blob(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    hits: list[dict[str, Any]]


def _result_of(size: int) -> ToolResult[_Blob]:
    """A result whose JSON (``{"hits":[{"t":"xxx..."}]}``) is exactly ``size`` bytes."""
    frame = len(orjson.dumps({"hits": [{"t": ""}]}))
    return ToolResult.ok(_Blob(hits=[{"t": "x" * (size - frame)}]))


@pytest.mark.parametrize("extra,ok", [(0, True), (1, False)])
def test_a_tool_result_of_exactly_the_limit_is_kept(extra: int, ok: bool) -> None:
    n = LIMITS["MAX_TOOL_RESULT_BYTES"]

    def handler(params: _Q, *, context: ToolContext) -> ToolResult[_Blob]:
        return _result_of(n + extra)

    tool = Tool(name="big_search", description="Returns one large result.", params=_Q,
                result=_Blob, handler=handler)
    with Engine.open(None, config=EngineConfig(clock=FixedClock(), extra_tools=[tool],
                                               bind={"RETRIEVAL": ["big_search"]})) as eng:
        sid = eng.driver.run(eng.driver.start("Water boils at 100 degrees.").sid).sid
        events = [e for r in eng.store.history(sid) for e in r.events]
    calls = [e for e in events if e["type"] == "ToolInvoked" and e["tool"] == "big_search"]
    assert calls and calls[0]["ok"] is ok
    if not ok:
        assert calls[0]["code"] == "INPUT_TOO_LARGE"


def test_a_deadline_holds_until_its_instant() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    state = SessionState(sid="s", claim="c", fsm="RETRIEVAL", config={"deadline_s": 30},
                         runtime=initial_runtime({"deadline_s": 30}, start))
    at = start + timedelta(seconds=30)
    assert deadline_envelope(state, at - timedelta(microseconds=1)) is None
    reached = deadline_envelope(state, at)
    assert reached is not None and reached.e is not None
    assert reached.e.code == "DEADLINE_EXCEEDED"


def test_run_takes_exactly_max_steps() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        sid = eng.driver.start("Water boils at 100 degrees Celsius.").sid
        steps = eng.driver.run(sid).rev  # one revision per step from revision 0
        again = eng.driver.start("Water boils at 100 degrees Celsius.").sid
        short = eng.driver.run(again, max_steps=steps - 1)
        assert short.rev == steps - 1 and short.fsm != "DONE"
        third = eng.driver.start("Water boils at 100 degrees Celsius.").sid
        assert eng.driver.run(third, max_steps=steps).fsm == "DONE"


@pytest.mark.parametrize("extra,added", [(0, 1), (1, 0)])
def test_an_ingested_document_of_exactly_the_limit_is_added(tmp_path: Path, extra: int,
                                                            added: int) -> None:
    n = 1000  # --max-doc-bytes: the same check as the documented default, at a size to test
    docs = tmp_path / "d.jsonl"
    docs.write_bytes(orjson.dumps({"id": "edge", "title": "Edge", "text": "x" * (n + extra)})
                     + b"\n")
    res = CliRunner().invoke(main, ["ingest", str(docs), "--max-doc-bytes", str(n), "--db",
                                    str(tmp_path / "i.db"), "--json"])
    body = orjson.loads(res.output)
    assert res.exit_code == 0 and body["added"] == added, body
    if not added:
        assert f"limit is {n}" in body["errors"][0]["msg"]
