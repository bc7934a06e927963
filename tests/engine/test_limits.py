"""Input limits (docs/limits.md): refused with INPUT_TOO_LARGE naming the field and the
limit, before anything is stored; hostile shapes give envelopes, never exceptions."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.errors import BadInput, InputTooLarge
from claimfsm.engine.runtime import Engine
from claimfsm.skills.analysis.split import split_claim
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.limits import MAX_CLAIM_CHARS, MAX_INPUT_BYTES, MAX_SUBCLAIMS
from claimfsm.skills.registry import all_skills
from claimfsm.skills.stance.numbers import find_numbers
from claimfsm.state.errors import UnknownSession
from tests.support.peek import peek

ST = {"sid": "s", "rev": 0, "fsm": "PARSE_CLAIM"}


def run(name: str, raw: object) -> dict[str, object]:
    env = all_skills()[name].run(raw, SkillContext())  # type: ignore[arg-type]
    out = orjson.loads(env.to_json())
    assert isinstance(out, dict)
    return out


def test_a_claim_over_the_limit_is_refused_naming_field_and_limit() -> None:
    out = run("parse_claim", {"claim": "a" * (MAX_CLAIM_CHARS + 1), "st": ST})
    assert out["s"] == "error"
    e = out["e"]
    assert isinstance(e, dict) and e["code"] == "INPUT_TOO_LARGE"
    assert e["msg"].startswith("claim:") and str(MAX_CLAIM_CHARS) in e["msg"]


def test_subclaim_fan_out_is_capped() -> None:
    claim = " and ".join(f"NASA landed on planet {i} in 19{i:02d}" for i in range(24))
    assert len(claim) <= MAX_CLAIM_CHARS and len(split_claim(claim)) > MAX_SUBCLAIMS
    out = run("parse_claim", {"claim": claim, "st": ST})
    e = out["e"]
    assert isinstance(e, dict) and e["code"] == "INPUT_TOO_LARGE" and "subclaims" in e["msg"]


@pytest.mark.parametrize("raw", [b"[]", b"1", b"true", b"null", b'"x"', [1, 2], 3, None])
@pytest.mark.parametrize("name", sorted(all_skills()))
def test_no_skill_raises_for_a_non_object(name: str, raw: object) -> None:
    out = run(name, raw)
    e = out["e"]
    assert out["s"] == "error" and isinstance(e, dict) and e["code"] == "BAD_INPUT"


def test_a_revision_beyond_the_integer_range_is_bad_input_not_a_crash() -> None:
    out = run("parse_claim", {"claim": "Water boils.", "st": {**ST, "rev": 2**64 - 1}})
    e = out["e"]
    assert isinstance(e, dict) and e["code"] == "BAD_INPUT" and e["msg"].startswith("st.rev")


@pytest.mark.parametrize("name", sorted(all_skills()))
def test_an_integer_beyond_the_envelope_range_anywhere_is_bad_input(name: str) -> None:
    out = run(name, b'{"claims": [{"id": "s1", "c": "x"}], "round": 18446744073709551615, '
                    b'"st": {"sid": "s", "rev": 1, "fsm": "VERIFY"}}')
    e = out["e"]
    assert isinstance(e, dict) and e["code"] == "BAD_INPUT" and e["msg"].startswith("round")


def test_raw_input_over_the_byte_limit_is_refused_before_parsing() -> None:
    out = run("parse_claim", b" " * (MAX_INPUT_BYTES + 1))
    e = out["e"]
    assert isinstance(e, dict) and e["code"] == "INPUT_TOO_LARGE"


def test_a_list_too_long_is_input_too_large() -> None:
    claims = [{"id": f"s{i}", "c": "x"} for i in range(MAX_SUBCLAIMS + 1)]
    out = run("evidence_query_plan", {"claims": claims, "st": ST})
    e = out["e"]
    assert isinstance(e, dict) and e["code"] == "INPUT_TOO_LARGE" and e["msg"].startswith("claims")


def test_driver_refuses_oversized_and_invalid_claims_storing_nothing() -> None:
    with Engine.open(None, config=EngineConfig(clock=FixedClock())) as eng:
        with pytest.raises(InputTooLarge):
            eng.driver.start("a" * (MAX_CLAIM_CHARS + 1), sid="long")
        with pytest.raises(BadInput):
            eng.driver.start("bad \udc80 text", sid="bad")
        for sid in ("long", "bad"):
            with pytest.raises(UnknownSession):
                eng.store.head(sid)


def test_cli_verify_refuses_a_long_claim_and_leaves_no_session(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    runner = CliRunner()
    first = runner.invoke(main, ["verify", "Water boils at 100 degrees.", "--db", str(db)])
    assert first.exit_code == 0
    before = peek(db, "select count(*) from st_sessions")
    out = runner.invoke(main, ["verify", "a" * (MAX_CLAIM_CHARS + 1), "--db", str(db), "--json"])
    assert out.exit_code == 2 and "INPUT_TOO_LARGE" in out.output
    assert not isinstance(out.exception, Exception) or isinstance(out.exception, SystemExit)
    after = peek(db, "select count(*) from st_sessions")
    assert before == after


def test_number_context_keeps_its_meaning_with_bounded_windows() -> None:
    nums = find_numbers("Apollo 13 launched in April 1970 with 3 astronauts; the Boeing-747 has "
                        "4 engines.")
    kinds = {n.text: n.kind for n in nums}
    assert kinds == {"13": "name", "1970": "year", "3": "num", "747": "name", "4": "num"}
    assert "astronaut" in next(n for n in nums if n.text == "3").context


def test_a_long_letter_run_before_a_number_is_still_read() -> None:
    # The run that made one document cost 36 s: now each number looks a bounded way back.
    nums = find_numbers("x" * 200_000 + " 5 engines")
    assert [(n.text, n.kind) for n in nums] == [("5", "num")]


def test_claimfsm_skill_evidence_extract_runs_with_the_demo_tools() -> None:
    raw = orjson.dumps({"claims": [{"id": "s1", "c": "Water boils at 100 degrees Celsius."}],
                        "hits": [{"for": "s1", "doc_id": "water-boiling", "title": "Water"}],
                        "st": {"sid": "s", "rev": 3, "fsm": "EXTRACT"}})
    res = CliRunner().invoke(main, ["skill", "evidence_extract"], input=raw)
    out = orjson.loads(res.output)
    assert res.exit_code == 0 and out["s"] == "ok"
    assert out["d"]["evidence"]["s1"][0]["doc_id"] == "water-boiling"


@pytest.mark.parametrize("claim", ["東京は日本の首都です。", "القاهرة هي عاصمة مصر"])
def test_claims_in_other_scripts_are_planned_not_refused(claim: str) -> None:
    out = run("parse_claim", {"claim": claim, "st": ST})
    assert out["s"] == "ok", out
