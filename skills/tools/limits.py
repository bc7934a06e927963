"""Per-tool rate and concurrency limits.

Rate limits are token buckets read off the injected clock (never the wall clock), and
their state is JSON-able (``state()``/``load()``) so it can live in the session and a
replay meets the same refusals. Concurrency limits count calls in flight under a lock;
they are process-local and not part of the state.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from claimfsm._base.errors import BadInput
from claimfsm._base.record import Record
from claimfsm.skills.tools.core import ToolDefinitionError

__all__ = ["RateLimit", "ToolLimits"]

_US = timedelta(microseconds=1)


@dataclass(init=False, repr=False, eq=False)  # methods written once: claimfsm._base.record
class RateLimit(Record, frozen=True):
    """At most ``capacity`` calls per ``per_seconds``, refilled continuously."""

    capacity: int
    per_seconds: float

    def __init__(self, capacity: int, per_seconds: float) -> None:
        self._fill(capacity=capacity, per_seconds=per_seconds)


class ToolLimits:
    """Token buckets and concurrency slots per tool name; thread-safe."""

    def __init__(
        self, rate: Mapping[str, RateLimit] | None = None,
        concurrency: Mapping[str, int] | None = None,
    ) -> None:
        self.rate: dict[str, RateLimit] = dict(rate or {})
        self.concurrency: dict[str, int] = dict(concurrency or {})
        for tool, limit in self.rate.items():
            if not isinstance(limit.capacity, int) or limit.capacity < 1:
                raise ToolDefinitionError(tool, "rate limit capacity must be an integer >= 1")
            if not limit.per_seconds > 0:
                raise ToolDefinitionError(tool, "rate limit per_seconds must be > 0")
        for tool, slots in self.concurrency.items():
            if not isinstance(slots, int) or slots < 1:
                raise ToolDefinitionError(tool, "concurrency limit must be an integer >= 1")
        self._lock = threading.Lock()
        # tool -> (tokens, time of last refill); a tool not yet seen has a full bucket.
        self._buckets: dict[str, tuple[float, datetime]] = {}
        self._in_flight: dict[str, int] = {}

    def _refilled(self, tool: str, limit: RateLimit, now: datetime) -> float:
        if tool not in self._buckets:
            return float(limit.capacity)
        tokens, at = self._buckets[tool]
        # A clock that went backwards (a replay from an earlier reading) refills nothing.
        elapsed_us = max(0, (now - at) // _US)
        gained = elapsed_us * limit.capacity / (limit.per_seconds * 1_000_000)
        return min(float(limit.capacity), tokens + gained)

    def take(self, tool: str, now: datetime) -> bool:
        """Take one token for ``tool`` at ``now``; False when its bucket is empty."""
        limit = self.rate.get(tool)
        if limit is None:
            return True
        with self._lock:
            tokens = self._refilled(tool, limit, now)
            if tokens < 1.0:
                self._buckets[tool] = (tokens, now)
                return False
            self._buckets[tool] = (tokens - 1.0, now)
            return True

    def tokens(self, tool: str, now: datetime) -> float | None:
        """Tokens available to ``tool`` at ``now`` (``None`` when it is not rate limited)."""
        limit = self.rate.get(tool)
        if limit is None:
            return None
        with self._lock:
            return self._refilled(tool, limit, now)

    def slots(self, tool: str) -> int | None:
        """How many calls of ``tool`` may be in flight at once (``None``: no limit)."""
        return self.concurrency.get(tool)

    def acquire(self, tool: str) -> bool:
        """Claim a concurrency slot for ``tool``; False when all are in use."""
        slots = self.concurrency.get(tool)
        with self._lock:
            current = self._in_flight.get(tool, 0)
            if slots is not None and current >= slots:
                return False
            self._in_flight[tool] = current + 1
            return True

    def release(self, tool: str) -> None:
        """Give back a slot claimed by :meth:`acquire`."""
        with self._lock:
            current = self._in_flight.get(tool, 0)
            if current <= 1:
                self._in_flight.pop(tool, None)
            else:
                self._in_flight[tool] = current - 1

    def in_flight(self, tool: str) -> int:
        """Calls of ``tool`` currently running."""
        with self._lock:
            return self._in_flight.get(tool, 0)

    @contextmanager
    def slot(self, tool: str) -> Iterator[bool]:
        """``with limits.slot(tool) as ok:`` -- acquire, and release on exit if acquired."""
        ok = self.acquire(tool)
        try:
            yield ok
        finally:
            if ok:
                self.release(tool)

    def state(self) -> dict[str, Any]:
        """The rate buckets as JSON: ``{tool: {"tokens": x, "at": iso}}``, sorted by tool."""
        with self._lock:
            return {
                tool: {"tokens": tokens, "at": at.isoformat()}
                for tool, (tokens, at) in sorted(self._buckets.items())
            }

    def load(self, state: Mapping[str, Any]) -> None:
        """Replace the rate buckets with a state produced by :meth:`state`."""
        buckets: dict[str, tuple[float, datetime]] = {}
        for tool, entry in state.items():
            try:
                tokens = float(entry["tokens"])
                at = datetime.fromisoformat(str(entry["at"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise BadInput(f"{tool}: malformed rate-limit state ({exc})",
                               field=str(tool)) from None
            buckets[str(tool)] = (tokens, at)
        with self._lock:
            self._buckets = buckets
