"""Resume and restart with real processes (``tests/kill_worker.py``).

- A process SIGKILLed in the middle of a RETRIEVAL tool call leaves a session that a new
  process resumes from its head: the calls whose results were committed never run again,
  only the interrupted one does, and the finished session equals an uninterrupted run.
- A session that hits RATE_LIMITED (fallback, then a retry) and is stopped takes exactly
  the same path in a new process, because the rate buckets, budget and retry record are
  in the revisions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from claimfsm.state.model import Revision
from claimfsm.state.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.kill_worker", *args], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _run(*args: str) -> list[str]:
    proc = _spawn(*args)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out.splitlines()


def _history(db: Path, sid: str) -> list[Revision]:
    with SQLiteStore(str(db)) as store:
        return list(store.history(sid))


def _comparable(rev: Revision) -> dict[str, Any]:
    return rev.model_dump(mode="json")


def test_a_session_killed_mid_retrieval_resumes_without_rerunning_done_calls(
    tmp_path: Path,
) -> None:
    db, counter = tmp_path / "killed.db", tmp_path / "killed.calls"
    # Invocation 3 is the follow-up search: two RETRIEVAL calls are committed by then.
    proc = _spawn(str(db), "S1", "0", "3", str(counter), "0")
    assert proc.stdout is not None
    lines: list[str] = []
    while not lines or lines[-1] != "blocked":
        line = proc.stdout.readline()
        assert line, proc.communicate(timeout=30)[1]
        lines.append(line.strip())
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    killed = _history(db, "S1")[-1]
    assert killed.fsm == "RETRIEVAL"
    status = {s["id"]: s["status"] for s in killed.state.steps}
    assert status == {"t1": "completed", "t2": "completed", "t3": "pending"}
    assert len(killed.state.outputs) == 2  # the two finished steps' results
    before = counter.read_text().splitlines()
    assert len(before) == 3

    lines = _run(str(db), "S1", "0", "0", str(counter), "0")
    assert lines[-1] == f"head {len(_history(db, 'S1')) - 1} DONE"
    calls = counter.read_text().splitlines()
    interrupted = before[2]
    assert interrupted.startswith("search ")
    resumed_calls = calls[3:]
    # The resumed process started with the interrupted call; the committed ones never ran
    # again.
    assert resumed_calls[0] == interrupted
    assert before[0] not in resumed_calls and before[1] not in resumed_calls

    # The resumed session is exactly what an uninterrupted run produces, and the calls
    # made are the uninterrupted run's plus the one the kill cut short.
    ref_db, ref_counter = tmp_path / "ref.db", tmp_path / "ref.calls"
    _run(str(ref_db), "S1", "0", "0", str(ref_counter), "0")
    resumed, reference = _history(db, "S1"), _history(ref_db, "S1")
    assert [_comparable(r) for r in resumed] == [_comparable(r) for r in reference]
    ref_calls = ref_counter.read_text().splitlines()
    assert Counter(calls) == Counter(ref_calls) + Counter([interrupted])


@pytest.mark.parametrize("stop", [11, 12])
def test_the_retry_path_is_identical_after_a_restart(tmp_path: Path, stop: int) -> None:
    ref_db = tmp_path / "ref.db"
    _run(str(ref_db), "S2", "0", "0", str(tmp_path / "ref.calls"), "70")
    reference = _history(ref_db, "S2")
    events = [[(e["tool"], e["code"], e["attempt"]) for e in r.events
               if e["type"] == "ToolInvoked"] for r in reference]
    # The path under test: a rate-limited search falls back to web_search (two attempts
    # in one revision), and later a rate-limited web_search is retried, then succeeds.
    fallback = next(i for i, ev in enumerate(events) if len(ev) == 2)
    assert events[fallback] == [("search", "RATE_LIMITED", 1), ("web_search", None, 2)]
    retried = next(r for r in reference if r.envelope and r.envelope["s"] == "retry")
    assert retried.rev == 12 and retried.state.retry is not None
    assert retried.state.retry.code == "RATE_LIMITED"
    assert reference[13].envelope is not None and reference[13].envelope["s"] == "ok"
    assert reference[-1].fsm == "DONE"

    db = tmp_path / "restarted.db"
    first = _run(str(db), "S2", str(stop), "0", str(tmp_path / "a.calls"), "70")
    assert first[-1] == f"head {stop} RETRIEVAL"
    _run(str(db), "S2", "0", "0", str(tmp_path / "b.calls"), "70")
    restarted = _history(db, "S2")
    assert [_comparable(r) for r in restarted] == [_comparable(r) for r in reference]
