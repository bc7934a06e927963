"""`make mutate`: mutation testing (mutmut) of the engine's core, one target at a time.

    python -m tests.support.mutate [--max-children N] [TARGET ...]

mutmut names a mutant after the module its file path spells and switches mutants on by
comparing that name with the running function's ``__module__``. The tests import
``claimfsm.engine.driver`` while the file is ``fsm/engine/driver.py`` (the folders map into
the package only through the install), so a run straight from the checkout would mutate
modules no test imports and report every mutant as surviving. Each target therefore runs
in its own staging tree under ``.cache/mutate/TARGET``, laid out as the package installs
(``claimfsm/`` = ``fsm/``, ``claimfsm/skills/`` = ``skills/``, ...), with a copy of the tests
and a ``pyproject.toml`` holding the target's mutmut settings; mutmut puts its mutated copy
first on ``sys.path``, ahead of the editable install.

Each target names the functions it mutates (the rest of their files is copied unmutated)
and the fast, in-process tests that cover them: mutmut runs, for each mutant, only the
tests of that subset which reach the mutated function. Tests that start subprocesses are
left out: a child process imports the installed, unmutated package.

Writes ``.cache/mutate/report.md`` (the figures and every surviving mutant's diff) and
exits 1 when a target kills fewer than :data:`GOAL` of its mutants. docs/testing.md lists
the survivors with the reason each is accepted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / ".cache" / "mutate"
#: The checkout's folders and where they sit in the installed package (pyproject.toml).
LAYOUT = {"skills": "claimfsm/skills", "state": "claimfsm/state",
          "fixtures": "claimfsm/fixtures"}
#: The checkout's folders the tests read as files, copied beside the staged tests.
DATA = ("docs", "fsm", "skills", "state", "fixtures")
GOAL = 0.90
#: mutmut's exit codes of a mutant's test run (mutmut/stats.py), as the report counts them.
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests",
          36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout"}
#: A mutant that makes its tests hang until the CPU limit is a caught one.
CAUGHT = ("killed", "timeout")
# The character mutmut puts between a class and its method in a mutant's name.
SEP = "\u01c1"


@dataclass(frozen=True)
class Target:
    """What one run mutates and which tests judge it.

    ``functions``: ``module: [function or Class.method, ...]`` (module relative to
    ``claimfsm``); ``tests``: paths or node ids under tests/.
    """

    functions: dict[str, tuple[str, ...]]
    tests: tuple[str, ...]

    def files(self) -> list[str]:
        """The package files (staging paths) that hold the functions."""
        return [f"claimfsm/{module.replace('.', '/')}.py" for module in self.functions]

    def globs(self) -> list[str]:
        """mutmut's names of the functions' mutants, as patterns."""
        out = []
        for module, names in self.functions.items():
            for name in names:
                cls, _, func = name.rpartition(".")
                key = f"x{SEP}{cls}{SEP}{func}" if cls else f"x_{func}"
                out.append(f"claimfsm.{module}.{key}__mutmut_*")
        return out


DRIVER_TESTS = (
    "tests/engine/test_driver.py",
    "tests/engine/test_driver_stateful.py",
    "tests/engine/test_driver_mutants.py",
    "tests/engine/test_driver_run_mutants.py",
    "tests/engine/test_machine.py",
    "tests/engine/test_rollback_budget.py",
    "tests/engine/test_runtime_limits.py",
    "tests/engine/test_session_settings.py",
    "tests/engine/test_api_custom_machine.py",
    "tests/testing/test_testing_toolkit.py",
)

TARGETS: dict[str, Target] = {
    "driver": Target(
        functions={
            "engine.driver": ("Driver.__init__", "Driver.run", "Driver.step", "Driver._step",
                              "Driver._bind", "Driver._report"),
            "engine.lifecycle": ("LifecycleMixin.start", "LifecycleMixin.fork"),
            "engine.fold": ("FoldMixin._retry_wait", "FoldMixin._next_state"),
            "engine.step": ("iso", "StepResult.committed"),
        },
        tests=DRIVER_TESTS,
    ),
    "rollback": Target(
        functions={
            "state.rollback": ("entry_state", "tools_restored", "rewind_revision"),
            "engine.lifecycle": ("LifecycleMixin.rollback",),
        },
        tests=(
            "tests/state/test_rollback.py",
            "tests/state/test_rollback_mutants.py",
            "tests/engine/test_rollback_budget.py",
            "tests/engine/test_driver.py",
            "tests/engine/test_driver_stateful.py",
        ),
    ),
    "sqlite-commit": Target(
        functions={
            "state.sqlite.store": ("SQLiteStore.create", "SQLiteStore.commit"),
            "state.sqlite.inserts": ("taken", "new_session"),
            "state.sqlite.core": ("SQLiteCore._write", "SQLiteCore._write_one"),
            "state.sqlite.entries": ("SQLiteEntries._session", "SQLiteEntries._new_blobs",
                                     "SQLiteEntries._remember"),
        },
        tests=(
            "tests/state/test_store_sqlite.py",
            "tests/state/test_store_errors.py",
            "tests/state/test_sqlite_commit_mutants.py",
        ),
    ),
    "limits": Target(
        functions={
            "engine.limits": ("_number", "_calls", "_rates", "check_config", "initial_runtime",
                              "_deadline", "seconds_left", "deadline_envelope",
                              "limit_envelope", "next_runtime", "SessionToolLimits.acquire",
                              "SessionToolLimits.release", "SessionToolLimits.in_flight",
                              "SessionLimits.build", "SessionLimits.executor_kwargs"),
            "skills.limits": ("too_large",),
        },
        tests=(
            "tests/engine/test_limits.py",
            "tests/engine/test_runtime_limits.py",
            "tests/engine/test_runtime_config.py",
            "tests/engine/test_rollback_budget.py",
            "tests/engine/test_limits_mutants.py",
            "tests/cli/test_runtime_cli.py",
            "tests/skills/tools/test_tool_limits.py",
            "tests/skills/test_skill_parse_claim.py",
            "tests/skills/test_skill_evidence_extract.py",
            "tests/skills/test_skill_evidence_query_plan.py",
        ),
    ),
    "replay": Target(
        functions={
            "replay.diff": ("join_path", "first_diff", "short"),
            "replay.runner": ("_check_fits", "_run", "_finish", "_verdict", "_expected"),
            "replay.compare": ("divergence_at", "compare_step"),
        },
        tests=(
            "tests/replay/test_replay.py",
            "tests/replay/test_replay_end_line.py",
            "tests/replay/test_replay_fixtures.py",
            "tests/replay/test_record.py",
            "tests/replay/test_replay_mutants.py",
            "tests/replay/test_replay_outcome_mutants.py",
            "tests/replay/test_replay_chain_mutants.py",
        ),
    ),
}


# Appended to the staged tests' conftest: the same examples on every run (a mutant is
# killed or not, never by chance), no shrinking (a failure is all a kill needs; shrinking
# one can take minutes) and no deadline (a mutant may be slow without being wrong).
_HYPOTHESIS = """

from hypothesis import Phase, settings

settings.register_profile("claimfsm-mutate", derandomize=True, database=None, deadline=None,
                          phases=(Phase.explicit, Phase.generate))
settings.load_profile("claimfsm-mutate")
"""


def stage(name: str, target: Target) -> Path:
    """A fresh staging tree for ``target`` (see the module docstring)."""
    where = WORK / name
    shutil.rmtree(where, ignore_errors=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "fsm", where / "claimfsm", ignore=skip)
    for folder, into in LAYOUT.items():
        shutil.copytree(ROOT / folder, where / into, ignore=skip)
    # Some tests read the checkout's files as data (docs, skill cards, source text): they
    # find them next to tests/, as in the checkout, unmutated.
    for data in (*DATA, "tests"):
        shutil.copytree(ROOT / data, where / data, ignore=skip)
    with (where / "tests" / "conftest.py").open("a") as conftest:
        conftest.write(_HYPOTHESIS)
    pytest_ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    settings = {
        "source_paths": ["claimfsm"],
        "also_copy": list(DATA),
        "only_mutate": target.files(),
        # addopts of the checkout (-q) would stack with mutmut's own flags.
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-o", "addopts="],
        "pytest_add_cli_args_test_selection": list(target.tests),
        # The staging tree is no git checkout.
        "use_git_change_detection": False,
    }
    lines = ["[tool.pytest.ini_options]",
             f"filterwarnings = {json.dumps(pytest_ini['ini_options']['filterwarnings'])}",
             "", "[tool.mutmut]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    (where / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return where


def mutmut(where: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the mutmut of this Python's environment in ``where``."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("CLAIMFSM_REQUIRE_ALL", None)  # the subsets leave the components' tests out
    command = [str(Path(sys.executable).parent / "mutmut"), *args]
    if log is None:
        return subprocess.run(command, cwd=where, env=env, capture_output=True, text=True,
                              check=False)
    with log.open("w") as out:
        return subprocess.run(command, cwd=where, env=env, stdout=out,
                              stderr=subprocess.STDOUT, text=True, check=False)


# Run in the staging tree by this Python: mutmut's own diff of each mutant named on stdin.
_DIFFS = """
import json, sys
from mutmut.mutation.diff_apply import find_mutant, get_diff_for_mutant
names = json.load(sys.stdin)
print(json.dumps({n: get_diff_for_mutant(n, path=find_mutant(n).path) for n in names}))
"""


def diffs(where: Path, names: list[str]) -> dict[str, str]:
    """``{mutant: unified diff}`` (one process for all, instead of ``mutmut show`` each)."""
    if not names:
        return {}
    done = subprocess.run([sys.executable, "-c", _DIFFS], cwd=where, input=json.dumps(names),
                          capture_output=True, text=True, check=True)
    found: dict[str, str] = json.loads(done.stdout)
    return found


def results(where: Path, target: Target) -> dict[str, str]:
    """``{mutant: status}`` of the target's functions, from mutmut's result files."""
    globs = target.globs()
    out: dict[str, str] = {}
    for meta in (where / "mutants").rglob("*.py.meta"):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for key, code in codes.items():
            if any(fnmatch(key, glob) for glob in globs):
                out[key] = "not checked" if code is None else STATUS.get(code, "suspicious")
    return out


def run(name: str, target: Target,
        max_children: int) -> tuple[Counter[str], dict[str, str], float]:
    """Stage and run one target: its counts by status, its survivors' status, seconds."""
    where = stage(name, target)
    started = time.monotonic()
    done = mutmut(where, "run", "--max-children", str(max_children), *target.globs(),
                  log=where / "mutmut.log")
    took = time.monotonic() - started
    found = results(where, target)
    if done.returncode != 0 or not found:
        raise SystemExit(f"mutmut failed on target {name}: see {where / 'mutmut.log'}")
    survivors = {k: status for k, status in sorted(found.items()) if status not in CAUGHT}
    return Counter(found.values()), survivors, took


def main(argv: list[str] | None = None) -> int:
    """Run the chosen targets (all by default); 1 if one misses :data:`GOAL`."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.mutate")
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        help=f"any of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--max-children", type=int, default=1,
                        help="mutants tested at once (default 1: the machine is shared)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.targets if name not in TARGETS]
    if unknown:
        parser.error(f"no target {', '.join(unknown)}: choose from {', '.join(TARGETS)}")
    names = args.targets or list(TARGETS)
    WORK.mkdir(parents=True, exist_ok=True)
    rows, report, missed = [], [], []
    for name in names:
        counts, survivors, took = run(name, TARGETS[name], args.max_children)
        total = sum(counts.values())
        caught = sum(counts[s] for s in CAUGHT)
        score = caught / total
        rows.append(f"| {name} | {total} | {counts['killed']} | {counts['timeout']} | "
                    f"{total - caught} | {score:.1%} | {took:.0f} s |")
        print(rows[-1], flush=True)
        if score < GOAL:
            missed.append(name)
        for key, diff in diffs(WORK / name, list(survivors)).items():
            report.append(f"### {key} ({survivors[key]})\n\n```diff\n{diff.strip()}\n```\n")
    head = ["| target | mutants | killed | timeout | survived | caught | time |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    text = "\n".join(["# mutmut", "", *head, *rows, "", "## Survivors", "", *report])
    (WORK / "report.md").write_text(text + "\n")
    print("\n".join(head + rows))
    print(f"survivors and their diffs: {(WORK / 'report.md').relative_to(ROOT)}")
    if missed:
        print(f"below {GOAL:.0%} caught: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
