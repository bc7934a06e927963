"""The console script's one-shot commands (``claimfsm.cli.ONE_SHOT``) end their process
without the interpreter's teardown (``claimfsm.cli._exit_now``), keeping what can be
seen of it: the exit status, the exit handlers, the flushed output, the database as a
normal exit leaves it, and the wait for other threads (with one alive, the process ends
as usual). A program calling ``main`` with its arguments keeps its process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine

_PROBE = """
import atexit, os, sys, threading
real_exit = os._exit
def fast(code):
    print("FAST", code, file=sys.stderr, flush=True)
    real_exit(code)
os._exit = fast
atexit.register(lambda: print("ATEXIT", file=sys.stderr, flush=True))
if os.environ.get("PROBE_UNFLUSHED"):  # written by a handler, left in stdout's buffer
    atexit.register(lambda: sys.stdout.write("UNFLUSHED\\n"))
if os.environ.get("PROBE_THREAD"):
    def late():  # alive until the interpreter ends as usual: it waits for this thread
        threading.main_thread().join()
        print("THREAD", file=sys.stderr, flush=True)
    threading.Thread(target=late).start()
from claimfsm.cli import main
sys.argv = ["claimfsm", *sys.argv[1:]]
if os.environ.get("PROBE_ARGS"):
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        print("AFTER", exc.code, file=sys.stderr, flush=True)
else:
    main()
"""


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    # Buffered output, as a console script's usually is: what the fast exit must flush.
    base = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True,
                          text=True, timeout=120, check=False, env={**base, **env})


@pytest.fixture()
def demo(tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "demo.db")
    with Engine.open(db) as eng:
        return db, eng.start("NASA landed on the Moon in 1969.").sid


def _marks(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [x for x in proc.stderr.splitlines()
            if x.split(" ")[0] in ("FAST", "ATEXIT", "THREAD", "AFTER")]


def test_a_step_ends_without_the_teardown_and_keeps_what_it_shows(
        demo: tuple[str, str]) -> None:
    db, sid = demo
    proc = _run("step", sid, "--db", db, "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _marks(proc) == ["ATEXIT", "FAST 0"]  # the handlers first, then the exit
    out = orjson.loads(proc.stdout)  # the whole document was flushed
    assert out["committed"] and out["rev"] == 1 and out["after"] == "RETRIEVAL"
    # The database as a normal exit leaves it: committed, checkpointed, no WAL left.
    assert not Path(db + "-wal").exists()
    with Engine.open(db, config=EngineConfig(seed=False)) as eng:
        assert eng.store.head(sid).rev == 1


def test_exit_statuses_are_the_commands(demo: tuple[str, str]) -> None:
    db, sid = demo
    missing = _run("step", "nosuch", "--db", db)
    assert missing.returncode == 2 and _marks(missing) == ["ATEXIT", "FAST 2"]
    assert "UNKNOWN_SESSION" in missing.stderr
    shown = _run("show", sid, "--db", db)
    assert shown.returncode == 0 and _marks(shown) == ["ATEXIT", "FAST 0"]
    assert sid in shown.stdout


def test_another_thread_alive_ends_the_process_as_usual(demo: tuple[str, str]) -> None:
    db, sid = demo
    proc = _run("show", sid, "--db", db, PROBE_THREAD="1")
    assert proc.returncode == 0 and _marks(proc) == ["THREAD", "ATEXIT"]


def test_other_commands_and_callers_keep_the_teardown(demo: tuple[str, str]) -> None:
    db, sid = demo
    helped = _run("--help")
    assert helped.returncode == 0 and _marks(helped) == ["ATEXIT"]
    called = _run("show", sid, "--db", db, PROBE_ARGS="1")
    assert called.returncode == 0 and _marks(called) == ["AFTER 0", "ATEXIT"]


def test_output_left_in_a_buffer_is_flushed_before_the_exit(demo: tuple[str, str]) -> None:
    db, sid = demo
    proc = _run("show", sid, "--db", db, PROBE_UNFLUSHED="1")
    assert proc.returncode == 0 and _marks(proc) == ["ATEXIT", "FAST 0"]
    assert proc.stdout.endswith("UNFLUSHED\n")
