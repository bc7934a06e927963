"""A batch hands its workers the ``Profile`` and the parsed ``Location`` themselves: no
dict of the profile on the way, no second parse of ``--db``."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from claimfsm.batch import BatchClaim, run_batch, runner, worker
from claimfsm.cli.main import main
from claimfsm.engine.profile import Profile
from claimfsm.engine.runtime import FIXTURES
from claimfsm.state.open import Location, locate
from tests.support.spies import db_parses, profiles_written

DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]
PROFILE = Profile.model_validate({"retrieval": "lexical", "judge": "lexical"})


def _claims(n: int = 3) -> list[BatchClaim]:
    return [BatchClaim(id=i, claim=DEMO[i]) for i in range(n)]


def test_in_process_sessions_start_with_the_profile_object(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = profiles_written(monkeypatch)
    summary = run_batch(_claims(), str(tmp_path / "b.db"), workers=0, profile=PROFILE)
    assert summary.done == 3
    assert len(written) == 3 and all(p is PROFILE for p in written)


def test_threaded_chunks_get_the_profile_and_the_location(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, Any]] = []

    def chunk(db: Any, items: Sequence[Any], profile: Any, threads: int,
              on_version: str = "refuse", observe: Any = None, sources: Any = None,
              ) -> list[Any]:
        calls.append((db, profile))
        return []

    monkeypatch.setattr(runner, "threads_for", lambda db: 2)
    monkeypatch.setattr(runner, "verify_chunk", chunk)
    run_batch(_claims(), str(tmp_path / "t.db"), workers=0, profile=PROFILE)
    assert calls and all(isinstance(db, Location) and profile is PROFILE
                         for db, profile in calls)


def test_ray_gets_the_profile_and_the_location(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def on_ray(db: Any, chunks: Any, **kw: Any) -> Iterator[list[Any]]:
        seen.update(db=db, **kw)
        yield []

    monkeypatch.setattr(runner, "ray_available", lambda: True)
    monkeypatch.setattr(runner, "run_on_ray", on_ray)
    db = str(tmp_path / "r.db")
    run_batch(_claims(), db, workers=2, profile=PROFILE)
    assert seen["profile"] is PROFILE and seen["db"] == locate(db)


def test_what_travels_to_a_ray_worker_pickles_as_itself(tmp_path: Path) -> None:
    where = locate("postgresql://u@h/db?index=ev.db")
    assert pickle.loads(pickle.dumps(where)) == where and hash(where)
    for profile in (PROFILE, Profile.default(), Profile(judge="learned", stance_model="m")):
        copy = pickle.loads(pickle.dumps(profile))
        assert copy == profile and type(copy) is Profile


def test_a_worker_keeps_one_engine_per_location_and_profile(tmp_path: Path) -> None:
    db = str(tmp_path / "w.db")
    where = locate(db)
    worker.warm(db, PROFILE, 1)
    try:
        # An equal profile (or location) finds the engine a warm-up opened.
        kept = worker._IDLE[(where, Profile(), "refuse")]
        assert len(kept) == 1
        lines = worker.verify_chunk(where, [(0, DEMO[0])], Profile())
        assert lines[0]["status"] == "done" and len(kept) == 1
    finally:
        worker.close_idle(db)
    assert not [key for key in worker._IDLE if key[0] == where]


def test_the_command_parses_db_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "claims.jsonl"
    path.write_text("".join(json.dumps({"id": i, "claim": c}) + "\n"
                            for i, c in enumerate(DEMO[:2])))
    db = str(tmp_path / "cli.db")
    parses = db_parses(monkeypatch)
    result = CliRunner().invoke(main, ["batch", str(path), "--db", db, "--workers", "0",
                                       "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert parses == [db]
