"""The envelope wire format: exact keys, order, validation, byte-stable output."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from claimfsm.skills.envelope import Envelope


def test_ok_envelope_puts_sp_last_and_serialises_compactly() -> None:
    env = Envelope.ok({"plans": [], "sp": {"rev": 99, "fsm": "X"}}, rev=6, fsm="RETRIEVAL")
    assert env.to_json() == (
        b'{"s":"ok","d":{"plans":[],"sp":{"rev":6,"fsm":"RETRIEVAL"}},"e":null,"rb":"none"}'
    )
    assert env.sp is not None and env.sp.rev == 6 and env.data == {"plans": []}


def test_error_envelope_has_null_d_and_the_code() -> None:
    env = Envelope.error("NO_PLANS", "plans: empty", rb="tools")
    assert orjson.loads(env.to_json()) == {
        "s": "error", "d": None, "e": {"code": "NO_PLANS", "msg": "plans: empty"}, "rb": "tools"}


@pytest.mark.parametrize(
    "bad",
    [
        {"s": "maybe", "d": None, "e": None, "rb": "none"},
        {"s": "ok", "d": None, "e": None, "rb": "all"},
        {"s": "ok", "d": None, "e": None, "rb": "none", "x": 1},
        {"s": "error", "d": None, "e": {"code": "lower", "msg": ""}, "rb": "none"},
    ],
)
def test_invalid_envelopes_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Envelope.from_json(orjson.dumps(bad))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=5).filter(lambda k: k != "sp"),
                       st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10), max_size=5),
       st.integers(min_value=0, max_value=10**6))
def test_round_trip_is_byte_identical(data: dict[str, object], rev: int) -> None:
    env = Envelope.ok(data, rev=rev, fsm="VERIFY")
    raw = env.to_json()
    assert Envelope.from_json(raw).to_json() == raw
    assert Envelope.ok(dict(data), rev=rev, fsm="VERIFY").to_json() == raw


# -- the fast paths give what validation gives ------------------------------------------

@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=5),
                       st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5) | st.none(),
                       max_size=4),
       st.integers(min_value=0, max_value=10**9), st.text(min_size=1, max_size=8))
def test_ok_builds_what_validation_would(data: dict[str, object], rev: int, fsm: str) -> None:
    fast = Envelope.ok(data, rev=rev, fsm=fsm)  # built without running the validator
    checked = Envelope.model_validate(fast.to_dict())
    assert fast == checked and fast.to_json() == checked.to_json()
    assert fast.model_fields_set == checked.model_fields_set
    assert fast.move() == (rev, fsm) and fast.sp == checked.sp


def test_ok_with_a_non_string_key_is_refused_as_before() -> None:
    with pytest.raises(ValidationError):
        Envelope.ok({1: "x"}, rev=1, fsm="A")  # type: ignore[dict-item]


@pytest.mark.parametrize("sp", [{"rev": "3", "fsm": "A"}, {"rev": True, "fsm": "A"},
                                {"rev": 3.0, "fsm": "A"}])
def test_sp_of_another_shape_goes_through_the_validator(sp: dict[str, object]) -> None:
    env = Envelope.model_validate({"s": "ok", "d": {"sp": sp}, "e": None, "rb": "none"})
    from claimfsm.skills.envelope import StatePatch

    expected = StatePatch.model_validate(sp)  # whatever pydantic makes of it
    assert env.move() == (expected.rev, expected.fsm) and env.sp == expected


@pytest.mark.parametrize("sp", [{"rev": -1, "fsm": "A"}, {"rev": 1, "fsm": ""},
                                {"rev": 1, "fsm": "A", "x": 0}, {"rev": 1}, "nope", None])
def test_a_bad_sp_is_refused_by_both(sp: object) -> None:
    env = Envelope.model_validate({"s": "ok", "d": {"sp": sp}, "e": None, "rb": "none"})
    with pytest.raises(ValidationError):
        env.move()
    with pytest.raises(ValidationError):
        _ = env.sp
