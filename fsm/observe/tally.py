"""What the steps of one process did, counted: the numbers ``/metrics`` exposes.

A :class:`Tally` is plain Python (no metrics library), so a Ray worker can keep one and
send it back with its results pickled; the batch command merges them into its own and
the Prometheus collector (:mod:`claimfsm.observe.metrics`) reads it at scrape time.
"""

from __future__ import annotations

import bisect
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUCKETS", "Histogram", "Tally"]

#: Upper bounds (seconds) of the latency histograms' buckets; a step of the demo
#: workflow takes a few milliseconds, a remote tool call up to seconds.
BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                              0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass
class Histogram:
    """Observations per bucket (not cumulative; the last one is +Inf) and their sum."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0

    def observe(self, seconds: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.total += seconds

    def merge(self, other: Histogram) -> None:
        """Add ``other``'s observations."""
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.total += other.total

    @property
    def count(self) -> int:
        """How many observations."""
        return sum(self.counts)


@dataclass
class Tally:
    """Counts of steps, commits, conflicts, tool calls and errors, and latencies.

    ``steps`` is keyed by (state, skill, status), ``tool_calls`` by (tool, outcome: ``ok``
    or the error code), ``errors`` by (source: ``step`` or ``tool``, code). Safe to use
    from several threads (the UI runs handlers on a pool)."""

    steps: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    commits: int = 0
    conflicts: int = 0
    tool_calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    errors: Counter[tuple[str, str]] = field(default_factory=Counter)
    step_seconds: dict[str, Histogram] = field(default_factory=dict)
    tool_seconds: dict[str, Histogram] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:  # the lock does not pickle
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(data)
        self._lock = threading.Lock()

    def step(self, state: str, skill: str, status: str, code: str | None, *, committed: bool,
             seconds: float) -> None:
        """Count one step; ``code`` is its envelope's error code (``None`` when ok)."""
        with self._lock:
            self.steps[state, skill, status] += 1
            if committed:
                self.commits += 1
            if code is not None:
                self.errors["step", code] += 1
                if code == "REV_CONFLICT":
                    self.conflicts += 1
            self.step_seconds.setdefault(state, Histogram()).observe(seconds)

    def tool(self, tool: str, code: str | None, seconds: float) -> None:
        """Count one tool call attempt; ``code`` is ``None`` when it succeeded."""
        with self._lock:
            self.tool_calls[tool, code or "ok"] += 1
            if code is not None:
                self.errors["tool", code] += 1
            self.tool_seconds.setdefault(tool, Histogram()).observe(seconds)

    def merge(self, other: Tally) -> None:
        """Add everything ``other`` counted (a worker's drained tally)."""
        with self._lock:
            self.steps.update(other.steps)
            self.commits += other.commits
            self.conflicts += other.conflicts
            self.tool_calls.update(other.tool_calls)
            self.errors.update(other.errors)
            for mine, theirs in ((self.step_seconds, other.step_seconds),
                                 (self.tool_seconds, other.tool_seconds)):
                for key, hist in theirs.items():
                    mine.setdefault(key, Histogram()).merge(hist)

    def drain(self) -> Tally:
        """What was counted since the last drain, as a new tally; this one starts over."""
        with self._lock:
            out = Tally(self.steps, self.commits, self.conflicts, self.tool_calls, self.errors,
                        self.step_seconds, self.tool_seconds)
            self.steps, self.tool_calls, self.errors = Counter(), Counter(), Counter()
            self.commits = self.conflicts = 0
            self.step_seconds, self.tool_seconds = {}, {}
        return out

    def copy(self) -> Tally:
        """A consistent snapshot (what a scrape reads)."""
        out = Tally()
        out.merge(self)
        return out
