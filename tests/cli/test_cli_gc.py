"""The one-shot commands (``claimfsm.cli.ONE_SHOT``) run with the cyclic garbage
collector off; every other command keeps it, and a caller passing the arguments to
``main`` gets its own setting back."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from claimfsm.cli import ONE_SHOT, main
from claimfsm.engine.runtime import Engine

_PROBE = """
import gc, sys
from claimfsm.cli import main
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


def test_a_caller_passing_arguments_gets_its_collector_back(demo: tuple[str, str]) -> None:
    db, sid = demo
    assert gc.isenabled()
    with pytest.raises(SystemExit) as exit_info:
        main(["step", sid, "--db", db])
    assert exit_info.value.code == 0 and gc.isenabled()
    gc.disable()
    try:  # and a caller that had it off keeps it off
        with pytest.raises(SystemExit):
            main(["show", sid, "--db", db])
        assert not gc.isenabled()
    finally:
        gc.enable()
