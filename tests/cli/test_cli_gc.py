"""The one-shot commands (``claimfsm.cli.ONE_SHOT``) run with the cyclic garbage
collector off; every other command keeps it, and a caller passing the arguments to
``main`` gets its own setting back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from claimfsm.cli import ONE_SHOT
from claimfsm.engine.runtime import Engine

_PROBE = """
import gc, os, sys
from claimfsm.cli import main
# A one-shot command ends its process itself (claimfsm.cli._exit_now): report from there.
real_exit = os._exit
def report(code):
    print("GC", gc.isenabled(), code, file=sys.stderr, flush=True)
    real_exit(code)
os._exit = report
try:
    main()
except SystemExit as exc:
    print("GC", gc.isenabled(), exc.code, file=sys.stderr)
"""


def _collector_after(*args: str) -> tuple[bool, object]:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True,
                          text=True, timeout=120, check=False)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("GC "))
    _, enabled, code = line.split()
    return enabled == "True", code


@pytest.fixture()
def demo(tmp_path: Path) -> tuple[str, str]:
    db = str(tmp_path / "demo.db")
    with Engine.open(db) as eng:
        return db, eng.start("NASA landed on the Moon in 1969.").sid


def test_the_console_script_steps_with_the_collector_off(demo: tuple[str, str]) -> None:
    db, sid = demo
    assert _collector_after("step", sid, "--db", db) == (False, "0")
    assert _collector_after("show", sid, "--db", db) == (False, "0")


def test_other_commands_keep_the_collector(demo: tuple[str, str], tmp_path: Path) -> None:
    db, _ = demo
    assert _collector_after("verify", "Honey never spoils.", "--db", db) == (True, "0")
    assert _collector_after("--help") == (True, "0")
    assert "verify" not in ONE_SHOT and "ui" not in ONE_SHOT and "batch" not in ONE_SHOT


_CALLER = """
import gc, sys
from claimfsm.cli import main
for before in (True, False):
    gc.enable() if before else gc.disable()
    for name in ("step", "show"):
        args = [name, sys.argv[1], "--db", sys.argv[2]]
        try:
            main(args)
        except SystemExit as exc:
            print("CALLER", before, args[0], exc.code, gc.isenabled(), file=sys.stderr)
"""


def test_a_caller_passing_arguments_gets_its_collector_back(demo: tuple[str, str]) -> None:
    # In a process of its own: the package's ``main`` is shadowed by its submodule of the
    # same name once that is imported (as other tests of this process do).
    db, sid = demo
    proc = subprocess.run([sys.executable, "-c", _CALLER, sid, db], capture_output=True,
                          text=True, timeout=120, check=False)
    lines = [x.split()[1:] for x in proc.stderr.splitlines() if x.startswith("CALLER ")]
    assert lines == [["True", "step", "0", "True"], ["True", "show", "0", "True"],
                     ["False", "step", "0", "False"], ["False", "show", "0", "False"]], \
        proc.stderr[-2000:]
