"""SIGKILL in the middle of a step whose searches run at the same time, then resume.

A real HTTP server (tests/support/search_server.py) holds every request that mentions
"aldrin" (the first planned query of the first subclaim, so the earliest in plan order)
until it is released; the step's other searches are answered. With them answered and the
step not committed, the process is killed. A new process resumes the session: it makes
the held searches again, and not one of the calls that had finished (their requests
counted at the server), because their answers were saved as they arrived
(claimfsm.state.answers).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson
import pytest

from claimfsm.state.sqlite import SQLiteStore
from tests.support.search_server import start

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def _spawn(db: Path, table: dict[str, Any]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.gather_worker", str(db),
         orjson.dumps(table).decode()],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return orjson.loads(resp.read())


def _key(req: dict[str, Any]) -> str:
    return req["path"] + orjson.dumps(req["body"]).decode()


def _held(req: dict[str, Any]) -> bool:
    return "aldrin" in _key(req).replace("/hangon/aldrin/", "/").lower()


def _answers(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn, conn:
        return int(conn.execute("SELECT count(*) FROM st_answers").fetchone()[0])


def test_a_kill_mid_gather_resumes_without_asking_answered_searches_again(
        tmp_path: Path) -> None:
    served = start()
    try:
        url = served.url
        table = {
            "wiki": {"kind": "mediawiki", "url": f"{url}/hangon/aldrin/w/api.php",
                     "timeout": 60},
            "web": {"kind": "opensearch", "url": f"{url}/docs/_search"},
            "news": {"kind": "json", "url": f"{url}/json/search?q={{q}}&n={{lim}}",
                     "hits": "results", "fetch_url": f"{url}/json/doc/{{id}}",
                     "fields": {"id": "key", "title": "name", "text": "body",
                                "score": "relevance"}},
        }
        db = tmp_path / "g.db"
        proc = _spawn(db, table)
        # Wait until the held searches are waiting and the others have stopped coming in.
        stable_since, last = time.monotonic(), -1
        while True:
            assert proc.poll() is None, proc.communicate(timeout=30)
            reqs = _get(f"{url}/requests")
            done = [r for r in reqs if r["state"] == "done"]
            waiting = [r for r in reqs if r["state"] == "waiting"]
            if len(done) != last:
                stable_since, last = time.monotonic(), len(done)
            if waiting and done and time.monotonic() - stable_since > 2.0:
                break
            time.sleep(0.1)
        assert all(_held(r) for r in waiting)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL

        with SQLiteStore(str(db)) as store:
            killed = store.head("G1")
        assert killed.fsm == "RETRIEVAL"  # the gathered step was not committed ...
        assert {s["status"] for s in killed.state.steps} == {"pending"}
        # A call whose requests all came back finished (a claim-level web_search asks each
        # backend in turn: the one for the held subclaim has answers from some, and is not).
        answered = Counter(_key(r) for r in done if not _held(r))
        assert answered and _answers(db) >= 4  # ... but the finished calls' answers were kept

        _get(f"{url}/release")
        again = _spawn(db, table)
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert out.splitlines()[-1].endswith("DONE"), out
        after = Counter(_key(r) for r in _get(f"{url}/requests"))
    finally:
        served.stop()
    repeated = {k: after[k] for k in answered if after[k] != answered[k]}
    assert not repeated  # no search that had been answered was asked again
    held = {_key(r) for r in waiting}
    assert held and all(after[k] >= 2 for k in held)  # the held ones were asked again
