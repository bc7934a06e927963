"""``claimfsm bench`` is a group: its own options run the engine benchmark as before, and
``batch`` and ``ui`` run the batch and inspector benchmarks, each loading its stack (Ray,
PostgreSQL, Starlette) only when it runs."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from claimfsm.cli.main import main

_PROBE = """
import sys
from claimfsm.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = ("ray", "starlette", "uvicorn", "psycopg", "selenium", "claimfsm.batch", "claimfsm.ui",
         "claimfsm.bench")
print("HEAVY", sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)
"""


def _heavy(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True,
                          text=True, timeout=120, check=False)
    return next(x for x in proc.stderr.splitlines() if x.startswith("HEAVY "))


def test_bench_help_lists_its_commands_and_its_own_options() -> None:
    result = CliRunner().invoke(main, ["bench", "--help"], prog_name="claimfsm")
    assert result.exit_code == 0
    assert "Usage: claimfsm bench [OPTIONS] [COMMAND [ARGS]...]" in result.output
    commands = result.output.split("Commands:")[1].split()
    assert commands[0] == "batch" and "ui" in commands
    for option in ("--quick", "--json FILE", "--reps", "--dir"):
        assert option in result.output
    for name in ("batch", "ui"):
        sub = CliRunner().invoke(main, ["bench", name, "--help"], prog_name="claimfsm")
        assert sub.exit_code == 0 and f"Usage: claimfsm bench {name} [OPTIONS]" in sub.output
        assert "--json FILE" in sub.output and "to this file as JSON" in sub.output


def test_options_of_bench_itself_are_refused_before_a_command() -> None:
    result = CliRunner().invoke(main, ["bench", "--quick", "--json", "x.json", "ui"])
    assert result.exit_code == 2
    assert "--quick, --json: options of `claimfsm bench` itself" in result.output


def test_help_loads_no_benchmark_stack() -> None:
    for args in (["--help"], ["bench", "--help"], ["bench", "batch", "--help"],
                 ["bench", "ui", "--help"]):
        assert _heavy(*args) == "HEAVY []", args
