"""Peak memory of the commands that read a user's files, on generated inputs of a given
size: ``ingest`` of a JSONL file, ``ingest`` of a folder of 1 MiB files, ``batch``
checking a claims file (a bad last line, so the whole file is read and nothing runs) and
``batch`` running claims in-process. ``python -m claimfsm.bench.inputs [--sizes 10,100]
[--claims 200,2000] [--json FILE]`` (``make bench-inputs``); docs/limits.md has figures.

Each case runs the real command in a fresh process and takes that process's peak
resident memory from the kernel (``ru_maxrss`` of ``os.wait4``): a measurement in the
benchmark, never an assertion in a test. Flat is the goal: a command that streams peaks
at about the same memory whatever the size of its input.

It imports nothing of claimfsm: it runs the ``claimfsm`` its interpreter imports (with
``PYTHONPATH`` set, another checkout of the code), so the same script measures before
and after a change.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["CASES", "measure", "run"]

CASES = ("ingest-jsonl", "ingest-folder", "batch-check", "batch-run")
MIB = 1024 * 1024
_WORDS = ("glacier ice sea level rise carbon ocean heat forest fire drought rain "
          "temperature record warming cooling arctic summer winter storm flood").split()
_CLAIMS = ("Water boils at 100 degrees Celsius at sea level.",
           "The Eiffel Tower is in Paris.", "Mount Everest is the tallest mountain on Earth.",
           "The Moon orbits the Earth.", "Arctic sea ice has declined since 1979.")


def _text(seed: int, size: int) -> str:
    words, n = [], 0
    while n < size:
        word = _WORDS[(seed * 7 + n * 13) % len(_WORDS)]
        words.append(word if n % 9 else f"{word}{seed % 997}.")
        n += len(word) + 1
    return " ".join(words)[:size]


def _jsonl(path: Path, mib: int) -> None:
    with path.open("w") as out:
        written = i = 0
        while written < mib * MIB:
            line = json.dumps({"id": f"d{i}", "title": f"Doc {i}", "text": _text(i, 2000)})
            out.write(line + "\n")
            written += len(line) + 1
            i += 1


def _folder(path: Path, mib: int) -> None:
    path.mkdir()
    for i in range(mib):
        (path / f"f{i:05}.txt").write_text(_text(i, MIB - 1) + "\n")


def _claims(path: Path, *, mib: int = 0, count: int = 0, bad_last: bool = False) -> None:
    with path.open("w") as out:
        written = i = 0
        while (written < mib * MIB) if mib else (i < count):
            line = json.dumps({"id": i, "claim": _CLAIMS[i % len(_CLAIMS)]})
            out.write(line + "\n")
            written += len(line) + 1
            i += 1
        if bad_last:
            out.write("not json\n")


def measure(argv: list[str], cwd: Path) -> tuple[float, float, int]:
    """``(peak MB, seconds, exit status)`` of ``claimfsm argv`` in a fresh process."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "from claimfsm.cli import main; main()",
                             *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    return usage.ru_maxrss * scale / 1e6, time.perf_counter() - began, proc.returncode


def run(sizes: list[int], counts: list[int], where: Path,
        cases: tuple[str, ...] = CASES) -> list[dict[str, Any]]:
    """Every case at every size (MiB; ``counts``: claims of ``batch-run``)."""
    rows: list[dict[str, Any]] = []

    def row(case: str, size: str, argv: list[str], work: Path) -> None:
        peak, seconds, status = measure(argv, work)
        rows.append({"case": case, "input": size, "peak_mb": round(peak, 1),
                     "seconds": round(seconds, 1), "exit": status})
        print(f"{case:<14} {size:>12}  peak {peak:8.1f} MB  {seconds:7.1f} s  exit {status}",
              file=sys.stderr)

    for mib in sizes:
        with tempfile.TemporaryDirectory(dir=where) as tmp:
            work = Path(tmp)
            if "ingest-jsonl" in cases:
                _jsonl(work / "docs.jsonl", mib)
                row("ingest-jsonl", f"{mib} MiB", ["ingest", "docs.jsonl", "--db", "j.db",
                                                   "--no-embed"], work)
                (work / "docs.jsonl").unlink()
            if "ingest-folder" in cases:
                _folder(work / "docs", mib)
                row("ingest-folder", f"{mib} x 1 MiB", ["ingest", "docs", "--db", "f.db",
                                                        "--no-embed"], work)
            if "batch-check" in cases:
                _claims(work / "claims.jsonl", mib=mib, bad_last=True)
                row("batch-check", f"{mib} MiB", ["batch", "claims.jsonl", "--db", "b.db",
                                                  "--workers", "0"], work)
    for count in counts if "batch-run" in cases else []:
        with tempfile.TemporaryDirectory(dir=where) as tmp:
            work = Path(tmp)
            _claims(work / "claims.jsonl", count=count)
            row("batch-run", f"{count} claims", ["batch", "claims.jsonl", "--db", "b.db",
                                                 "--workers", "0", "--out", "out.jsonl"], work)
    return rows


def main() -> None:
    """The command line (see the module)."""
    parser = argparse.ArgumentParser(prog="python -m claimfsm.bench.inputs")
    parser.add_argument("--sizes", default="10,100", help="input sizes in MiB")
    parser.add_argument("--claims", default="200,2000", help="claims of the batch runs")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--dir", default=None, help="where the inputs are generated")
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args()
    if args.json and not Path(args.json).resolve().parent.is_dir():
        parser.error(f"--json {args.json}: no directory {Path(args.json).parent}")
    rows = run([int(s) for s in args.sizes.split(",") if s],
               [int(c) for c in args.claims.split(",") if c],
               Path(args.dir or tempfile.gettempdir()), tuple(args.cases.split(",")))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":  # pragma: no cover - the benchmark's entry point
    main()
