"""The verification profile: resolution (options > config file > defaults), validation
with errors naming the field, storage in the session, and every entry point taking it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from claimfsm.cli.main import main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.model_profile import MODEL_KEYS
from claimfsm.engine.profile import (
    RUN_CONFIG,
    Profile,
    ProfileError,
    _plain,
    profile_of,
    resolve_profile,
)
from claimfsm.engine.runtime import Engine
from claimfsm.skills.embed import HashingEmbedder
from tests.replay.sealing import reseal
from tests.support.components import need_semantic, without_semantic

CLAIM = "NASA landed on the Moon in 1969."


def cli(*args: str) -> tuple[int, Any, str]:
    result = CliRunner().invoke(main, list(args))
    try:
        return result.exit_code, orjson.loads(result.stdout), result.stderr
    except orjson.JSONDecodeError:
        return result.exit_code, result.stdout, result.stderr


def test_defaults_are_lexical_everywhere(tmp_path: Path) -> None:
    prof = resolve_profile({}, cwd=tmp_path)
    assert prof == Profile(retrieval="lexical", judge="lexical", stance_model=None)
    assert prof.is_default and prof.config() == {
        "profile": {"retrieval": "lexical", "judge": "lexical", "stance_model": None},
        **RUN_CONFIG}


def test_config_file_then_options_override_it(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.npz").write_bytes(b"x")
    (tmp_path / "claimfsm.toml").write_text('retrieval = "hybrid"\n'
                                            'stance_model = "models/m.npz"\n')
    prof = resolve_profile({}, cwd=tmp_path)
    # A relative model path is relative to the config file, so it works from anywhere.
    assert prof == Profile(retrieval="hybrid", judge="learned",
                           stance_model=str(tmp_path / "models" / "m.npz"))
    over = resolve_profile({"retrieval": "lexical", "judge": "lexical"}, cwd=tmp_path)
    assert over == Profile()


def test_pyproject_tool_table_is_read(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n'
                                             '[tool.claimfsm]\nretrieval = "hybrid"\n')
    assert resolve_profile({}, cwd=tmp_path).retrieval == "hybrid"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert resolve_profile({}, cwd=tmp_path) == Profile()


@pytest.mark.parametrize(("text", "code", "needle"), [
    ('retreival = "hybrid"\n', "BAD_PROFILE", "unknown key 'retreival'"),
    ('retrieval = "dense"\n', "BAD_PROFILE", "retrieval"),
    ('judge = "learned"\n', "BAD_PROFILE", "stance_model"),
    ('retrieval = \n', "BAD_CONFIG", "claimfsm.toml: not readable TOML"),
    ('stance_model = "nowhere.npz"\n', "MODEL_NOT_FOUND", "stance_model: no file"),
])
def test_bad_config_files_name_the_field(tmp_path: Path, text: str, code: str,
                                         needle: str) -> None:
    (tmp_path / "claimfsm.toml").write_text(text)
    with pytest.raises(ProfileError) as info:
        resolve_profile({}, cwd=tmp_path)
    assert info.value.code == code and needle in info.value.msg


def test_options_are_validated_too(tmp_path: Path) -> None:
    with pytest.raises(ProfileError) as info:
        resolve_profile({"judge": "learned"}, cwd=tmp_path)
    assert info.value.code == "BAD_PROFILE" and "stance_model" in info.value.msg
    with pytest.raises(ProfileError) as info:
        resolve_profile({"stance_model": tmp_path / "gone.npz"}, cwd=tmp_path)
    assert info.value.code == "MODEL_NOT_FOUND"


def test_sessions_from_before_profiles_read_as_what_they_ran() -> None:
    assert profile_of({}) == Profile()
    assert profile_of({"stance_model": "m.npz"}) == Profile(judge="learned",
                                                              stance_model="m.npz")
    stored = Profile(retrieval="hybrid").config()
    assert profile_of(stored).retrieval == "hybrid"
    with pytest.raises(ProfileError):
        profile_of({"profile": {"retrieval": "psychic"}})


_VALUES = st.one_of(st.sampled_from(["lexical", "hybrid", "learned", "m.npz", "", "x"]),
                    st.none(), st.integers(0, 1), st.booleans())


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["retrieval", "judge", "stance_model"]), _VALUES))
def test_the_unvalidated_profile_path_is_the_validator_s_answer(values: dict[str, Any]) -> None:
    # profile_of and resolve_profile skip the validator for plainly valid values (no
    # validator compiled at start-up); whatever they build must be what it would build.
    try:
        checked: Profile | None = Profile.model_validate(dict(values))
    except ValidationError:
        checked = None
    plain = _plain(values)
    if plain is not None:
        assert checked is not None and plain == checked
        assert plain.model_fields_set == checked.model_fields_set
    try:
        built: Profile | None = profile_of({"profile": values})
    except ProfileError:
        built = None
    assert built == checked
    if built is not None and checked is not None:
        # The model keys are stored only when set, and the people-in-the-loop options
        # are left out at their defaults (sessions without them are stored as before),
        # pause points as lists; the rest is the validator's dump.
        assert checked.model_dump() == built.model_dump()
        people = ("review", "pause_before", "pause_after")
        assert built.to_dict() == {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in checked.model_dump().items()
            if not (k in people and v in ((), "never"))
            and not (k in MODEL_KEYS and v == Profile.model_fields[k].default)}
        assert built.config() == checked.config()


def test_the_default_profile_is_profile() -> None:
    assert Profile.default() == Profile() and Profile.default().is_default
    assert Profile.default().model_fields_set == Profile().model_fields_set == set()


def test_cli_stores_the_profile_and_show_and_history_say_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "p.db")
    code, out, _ = cli("start", CLAIM, "--db", db, "--json", "--retrieval", "lexical")
    assert code == 0
    sid = out["sid"]
    code, shown, _ = cli("show", sid, "--db", db, "--json")
    assert shown["state"]["config"]["profile"] == {"retrieval": "lexical", "judge": "lexical",
                                                   "stance_model": None}
    assert shown["profile"]["retrieval"] == "lexical"
    code, text, _ = cli("show", sid, "--db", db)
    assert "profile: retrieval lexical, judge lexical" in text
    code, text, _ = cli("history", sid, "--db", db)
    assert text.splitlines()[0] == "profile: retrieval lexical, judge lexical"
    code, hist, _ = cli("history", sid, "--db", db, "--json")
    assert all(r["profile"]["judge"] == "lexical" for r in hist)


def test_cli_reports_a_bad_config_file_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claimfsm.toml").write_text('judge = "oracle"\n')
    for cmd in ("verify", "start"):
        code, out, err = cli(cmd, CLAIM, "--db", str(tmp_path / "p.db"))
        assert code == 2 and "error: BAD_PROFILE: claimfsm.toml: judge: Input should be" in err
        assert "Traceback" not in err
    code, out, _ = cli("verify", CLAIM, "--db", str(tmp_path / "p.db"), "--json")
    assert code == 2 and out["error"]["code"] == "BAD_PROFILE"
    code, out, err = cli("verify", CLAIM, "--retrieval", "psychic")
    assert code == 2 and "--retrieval" in err


def test_a_missing_model_is_reported_by_verify(tmp_path: Path) -> None:
    code, out, _ = cli("verify", CLAIM, "--db", str(tmp_path / "p.db"), "--json",
                       "--stance-model", str(tmp_path / "gone.npz"))
    assert code == 2 and out["error"]["code"] == "MODEL_NOT_FOUND"
    assert "stance_model" in out["error"]["msg"]


def _searched(engine: Engine, sid: str) -> list[tuple[str, list[float]]]:
    head = engine.store.head(sid)
    return [(r["tool"], [h["score"] for h in (r.get("value") or {}).get("hits", [])])
            for r in head.state.tool_results if r.get("ok") and r["tool"] == "search"]


def test_each_session_retrieves_the_way_its_profile_says() -> None:
    emb = HashingEmbedder()
    hybrid_config = EngineConfig(profile=Profile(retrieval="hybrid"), embedder=emb)
    with Engine.open(None, config=hybrid_config) as engine:
        assert engine.index.dense.active()
        hybrid = engine.start(CLAIM)
        engine.driver.run(hybrid.sid)
        lexical = engine.driver.start(CLAIM, config=Profile().config())
        engine.driver.run(lexical.sid)
        head = engine.store.head(hybrid.sid)
        req = next(r for r in head.state.tool_requests if r["tool"] == "search")
        args = req["args"]
        want_h = [h.score for h in engine.index.search(args["q"], lim=args["lim"],
                                                       src=args["src"], dense=True)]
        want_l = [h.score for h in engine.index.search(args["q"], lim=args["lim"],
                                                       src=args["src"], dense=False)]
        assert want_h != want_l  # the test can tell the two apart
        assert _searched(engine, hybrid.sid)[0][1] == want_h
        assert _searched(engine, lexical.sid)[0][1] == want_l
        assert engine.store.head(hybrid.sid).fsm == "DONE"


def test_a_hybrid_session_stepped_later_loads_the_embedder(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with Engine.open(db) as engine:
        sid = engine.driver.start(CLAIM, config=Profile(retrieval="hybrid").config()).sid
        assert engine.index.dense.embedder is None
    emb = HashingEmbedder()
    with Engine.open(db, config=EngineConfig(embedder=emb)) as engine:
        assert engine.index.dense.embedder is None  # a lexical engine: nothing loaded
        engine.driver.run(sid)
        assert engine.index.dense.embedder is emb and engine.index.dense.count() > 0
        assert engine.store.head(sid).fsm == "DONE"


def test_hybrid_without_the_semantic_extra_is_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_semantic(monkeypatch)
    code, out, _ = cli("verify", CLAIM, "--db", str(tmp_path / "p.db"), "--json",
                       "--retrieval", "hybrid")
    assert code == 2 and out["error"]["code"] == "SEMANTIC_UNAVAILABLE"
    assert "retrieval" in out["error"]["msg"]


def test_the_record_carries_the_profile_and_replays(tmp_path: Path) -> None:
    rec = tmp_path / "s.jsonl"
    code, out, _ = cli("verify", CLAIM, "--db", str(tmp_path / "p.db"), "--json",
                       "--record", str(rec))
    assert code == 0 and out["verdict"] == "SUPPORTS"
    header = orjson.loads(rec.read_text().splitlines()[0])
    assert header["config"]["profile"]["retrieval"] == "lexical"
    code, _, _ = cli("replay", str(rec), "--mode", "strict")
    assert code == 0


def _hybrid_record(tmp_path: Path) -> Path:
    rec = tmp_path / "h.jsonl"
    code, _, _ = cli("verify", CLAIM, "--db", str(tmp_path / "p.db"), "--json",
                     "--record", str(rec))
    assert code == 0
    lines = rec.read_text().splitlines()
    header = orjson.loads(lines[0])
    header["config"]["profile"]["retrieval"] = "hybrid"  # sealed again: not an edit
    rec.write_text("\n".join([reseal(orjson.dumps(header)).decode(), *lines[1:]]) + "\n")
    return rec


def test_live_replay_of_a_hybrid_session_needs_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_semantic(monkeypatch)
    code, out, _ = cli("replay", str(_hybrid_record(tmp_path)), "--mode", "live", "--json")
    assert code == 2 and "SEMANTIC_UNAVAILABLE" in orjson.dumps(out).decode()


def test_live_replay_of_a_hybrid_session_retrieves_hybrid(tmp_path: Path) -> None:
    need_semantic()
    rec = tmp_path / "h.jsonl"
    code, _, _ = cli("verify", CLAIM, "--db", str(tmp_path / "p.db"), "--json",
                     "--retrieval", "hybrid", "--record", str(rec))
    assert code == 0
    code, out, _ = cli("replay", str(rec), "--mode", "live", "--json")
    assert code == 0, out
    # The same record with its profile turned lexical retrieves differently live.
    code, out, _ = cli("replay", str(_lexical(rec)), "--mode", "live", "--json")
    assert code == 1


def _lexical(rec: Path) -> Path:
    lines = rec.read_text().splitlines()
    header = orjson.loads(lines[0])
    header["config"]["profile"]["retrieval"] = "lexical"  # sealed again: not an edit
    out = rec.with_name("l.jsonl")
    out.write_text("\n".join([reseal(orjson.dumps(header)).decode(), *lines[1:]]) + "\n")
    return out
