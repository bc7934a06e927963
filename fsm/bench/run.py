"""``claimfsm bench``: run every case several times, keep the median, min and max.

:func:`run_bench` returns a :class:`BenchReport` whose :meth:`~BenchReport.to_json`
holds each figure under its key (see :data:`KEYS`) with ``<key>_min`` and ``<key>_max``
beside it, plus a ``meta`` object (machine, settings, extra figures). The figures and
how each is taken are described in ``docs/bench.md``.
"""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from claimfsm.bench import cases, scale, versions

__all__ = ["GOALS", "KEYS", "BenchConfig", "BenchReport", "format_table", "run_bench"]

#: Every figure, in report order: key -> (unit, what it is).
KEYS: dict[str, tuple[str, str]] = {
    "mem_us_per_step": ("µs", "engine step, no-op skills, in memory"),
    "sqlite_normal_us_per_step": ("µs", "engine step, SQLite synchronous=NORMAL"),
    "sqlite_full_us_per_step": ("µs", "engine step, SQLite fsync per commit"),
    "group_commit_us_per_step": ("µs", "amortised step, many threads, fsync per batch"),
    "rev_read_us": ("µs", "read one revision of a 100-step session, cold store"),
    "history_100_us": ("µs", "history() of a 100-step session, cold store"),
    "replay_steps_per_s": ("steps/s", "strict replay, no-op skills"),
    "bytes_per_step_noop": ("B", "bytes stored per no-op step"),
    "bytes_ratio_realistic": ("ratio", "stored / full snapshots per step, real claims"),
    "peak_mb_per_1000_sessions": ("MB", "peak memory, 1000 live sessions in memory"),
    "rev10k_step_ratio": ("ratio", "step at revision 10,000 / at revision 10, SQLite"),
    "rev10k_head_ratio": ("ratio", "cold head read at revision 10,000 / at revision 10"),
    "cli_step_ms": ("ms", "`claimfsm step SID` as a process, demo database"),
    "version_check_us": ("µs", "what the machine-version check adds to a step"),
}

#: The goals of issue 6: key -> (comparison, bound); keys without a goal are reported only.
GOALS: dict[str, tuple[str, float]] = {
    "mem_us_per_step": ("<=", 50.0),
    "sqlite_normal_us_per_step": ("<=", 150.0),
    "group_commit_us_per_step": ("<=", 350.0),
    "rev_read_us": ("<=", 25.0),
    "history_100_us": ("<=", 2000.0),
    "replay_steps_per_s": (">=", 20000.0),
    "bytes_ratio_realistic": ("<", 0.25),
    "rev10k_step_ratio": ("<=", 1.2),
    "rev10k_head_ratio": ("<=", 1.2),
    "cli_step_ms": ("<=", 150.0),
    "version_check_us": ("<=", 1.0),  # issue 25
}


@dataclass(frozen=True)
class BenchConfig:
    """Sizes of one run; :meth:`quick` is the under-a-minute variant."""

    reps: int = 7
    mem_sessions: int = 2000
    normal_sessions: int = 1000
    full_sessions: int = 200
    group_threads: int = 64
    group_sessions: int = 8
    reads: int = 51
    replay_sessions: int = 1000
    peak_sessions: int = 1000
    deep_revisions: int = 10_000
    cli_sessions: int = 2
    cli_steps: int = 20
    claims: int | None = None  # None: every claim of fixtures/demo_claims.json
    quick_run: bool = False

    @classmethod
    def quick(cls) -> BenchConfig:
        """Fewer repetitions and sessions: a run well under a minute."""
        return cls(reps=3, mem_sessions=500, normal_sessions=200, full_sessions=40,
                   group_threads=32, group_sessions=4, reads=21, replay_sessions=200,
                   peak_sessions=300, cli_sessions=1, claims=None, quick_run=True)


@dataclass
class BenchReport:
    """Samples per key; figures are their median, min and max."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        """Record one repetition's figure for ``key``."""
        self.samples.setdefault(key, []).append(float(value))

    def median(self, key: str) -> float:
        """The median of ``key``'s samples."""
        return float(statistics.median(self.samples[key]))

    def met(self, key: str) -> bool | None:
        """Whether ``key`` meets its goal (``None`` when it has no goal)."""
        if key not in GOALS:
            return None
        op, bound = GOALS[key]
        value = self.median(key)
        return {"<=": value <= bound, ">=": value >= bound, "<": value < bound}[op]

    def to_json(self) -> dict[str, Any]:
        """``{key: median, key_min: min, key_max: max, ..., meta: {...}}``."""
        out: dict[str, Any] = {}
        for key in KEYS:
            values = self.samples.get(key)
            if not values:
                continue
            out[key] = _round(statistics.median(values))
            out[f"{key}_min"] = _round(min(values))
            out[f"{key}_max"] = _round(max(values))
        out["meta"] = self.meta
        return out


def _round(value: float) -> float:
    return round(value, 4) if abs(value) < 10 else round(value, 1)


Progress = Callable[[str], None]


def run_bench(config: BenchConfig, progress: Progress | None = None,
              where: str | os.PathLike[str] | None = None) -> BenchReport:
    """Run every case ``config.reps`` times (deterministic byte counts once), with the
    SQLite files in a temporary directory under ``where`` (default: the system's).
    """
    say = progress or (lambda msg: None)
    report = BenchReport()
    report.meta = _machine(config)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="claimfsm-bench-", dir=where) as root:
        for rep in range(config.reps):
            tmp = Path(root) / f"rep{rep}"
            tmp.mkdir()
            _one_rep(config, rep, tmp, report, say)
        say("realistic sessions (real claims, real engine, SQLite)")
        real = cases.realistic(Path(root), _claims(config.claims))
    report.add("bytes_ratio_realistic", real["bytes_ratio"])
    report.meta["realistic"] = {k: _round(v) for k, v in real.items()}
    report.meta["seconds"] = round(time.perf_counter() - started, 1)
    return report


def _one_rep(config: BenchConfig, rep: int, tmp: Path, report: BenchReport,
             say: Progress) -> None:
    n = f"{rep + 1}/{config.reps}"
    say(f"[{n}] in-memory steps ({config.mem_sessions} sessions)")
    report.add("mem_us_per_step", cases.steps_us(tmp, "memory", config.mem_sessions))
    say(f"[{n}] SQLite normal steps ({config.normal_sessions} sessions)")
    report.add("sqlite_normal_us_per_step", cases.steps_us(tmp, "normal",
                                                           config.normal_sessions))
    if rep == 0:
        report.add("bytes_per_step_noop", cases.bytes_noop(tmp / "normal.db"))
    say(f"[{n}] SQLite full steps ({config.full_sessions} sessions)")
    report.add("sqlite_full_us_per_step", cases.steps_us(tmp, "full", config.full_sessions))
    say(f"[{n}] group commit ({config.group_threads} threads)")
    us, per_batch = cases.group_commit_us(tmp, config.group_threads, config.group_sessions)
    report.add("group_commit_us_per_step", us)
    report.meta.setdefault("group_commits_per_fsync", []).append(round(per_batch, 1))
    say(f"[{n}] revision reads and history (100-step session)")
    loop = tmp / "loop.db"
    sid = cases.loop_session(loop)
    report.add("rev_read_us", cases.rev_read_us(loop, sid, config.reads, seed=rep))
    report.add("history_100_us", cases.history_us(loop, sid, max(3, config.reads // 3)))
    report.meta.setdefault("rev_read_cached_us", []).append(
        round(cases.rev_read_cached_us(loop, sid, config.reads, seed=rep), 2))
    say(f"[{n}] the version check ({config.mem_sessions} sessions)")
    report.add("version_check_us", versions.version_check_us(config.mem_sessions, rounds=5))
    say(f"[{n}] strict replay ({config.replay_sessions} sessions)")
    report.add("replay_steps_per_s", cases.replay_steps_per_s(config.replay_sessions))
    say(f"[{n}] a session {config.deep_revisions:,} revisions deep")
    deep = scale.deep_session_ratios(tmp, config.deep_revisions)
    report.add("rev10k_step_ratio", deep["step_ratio"])
    report.add("rev10k_head_ratio", deep["head_ratio"])
    report.meta.setdefault("deep_session", []).append({k: _round(v) for k, v in deep.items()})
    if rep < 3:
        say(f"[{n}] peak memory ({config.peak_sessions} live sessions)")
        report.add("peak_mb_per_1000_sessions", cases.peak_mb_per_1000(config.peak_sessions))
        if config.cli_sessions:
            say(f"[{n}] claimfsm step and show as processes ({config.cli_sessions} sessions)")
            cli = scale.cli_ms(tmp, config.cli_sessions, config.cli_steps)
            report.add("cli_step_ms", cli["step_ms"])
            report.meta.setdefault("cli_show_ms", []).append(round(cli["show_ms"], 1))
            report.meta.setdefault("cli_floor_ms", []).append(round(cli["floor_ms"], 1))


def _claims(limit: int | None) -> list[str]:
    from claimfsm.engine.runtime import FIXTURES

    items = orjson.loads((FIXTURES / "demo_claims.json").read_bytes())
    claims = [str(item["claim"]) for item in items]
    return claims if limit is None else claims[:limit]


def _machine(config: BenchConfig) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(terse=True),
        "cpus": os.cpu_count(),
        "sqlite": _sqlite_version(),
        "reps": config.reps,
        "quick": config.quick_run,
    }


def _sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


def format_table(report: BenchReport) -> str:
    """The report as an aligned text table: key, median, min, max, unit, goal."""
    head = f"{'key':<28} {'median':>12} {'min':>12} {'max':>12}  {'unit':<8} goal"
    lines = [head, "-" * len(head)]
    for key, (unit, _what) in KEYS.items():
        values = report.samples.get(key)
        if not values:
            continue
        goal = ""
        if key in GOALS:
            op, bound = GOALS[key]
            goal = f"{op} {bound:g}  " + ("ok" if report.met(key) else "MISSED")
        lines.append(f"{key:<28} {_fmt(statistics.median(values)):>12} "
                     f"{_fmt(min(values)):>12} {_fmt(max(values)):>12}  {unit:<8} {goal}")
    return "\n".join(lines)


def _fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}"
