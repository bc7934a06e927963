"""Prometheus metrics: a :class:`~claimfsm.observe.tally.Tally` and the store's sessions,
as text at ``/metrics`` (``claimfsm ui``) or on its own port (``claimfsm batch
--metrics-port``). Needs ``prometheus_client`` (the ``ui`` extra).

Counters come from the tally of this process (and, for a batch on Ray, the tallies its
workers send back); the gauges of sessions by state and of waiting sessions are read
from the store at scrape time, at most every :data:`STORE_TTL` seconds.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import accumulate
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from claimfsm.observe.tally import BUCKETS, Histogram, Tally
from claimfsm.state.catalog import MAX_PAGE, SummaryPage, SummaryQuery
from claimfsm.state.model import Revision
from claimfsm.state.open import Location, open_store

__all__ = ["CONTENT_TYPE", "STORE_TTL", "StoreGauges", "registry_for", "render",
           "serve_metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: Seconds a reading of the store's sessions is reused: a scrape every few seconds must
#: not walk a large store each time.
STORE_TTL = 5.0
# Sessions whose head is read to see whether they wait (the rest are counted by state
# only): the running ones, which a healthy store keeps few of.
_HEADS = 10_000


def _waits(head: Revision) -> bool:
    # A session holds (waits for a person) while state.runtime["hold"] names its current
    # state: how sessions that wait for input or a resume are stored (docs/review.md).
    hold = head.state.runtime.get("hold") if head.state.runtime else None
    return isinstance(hold, dict) and hold.get("state") == head.fsm


class StoreGauges:
    """Sessions by state and waiting sessions, read through ``summaries`` and ``head``
    (the UI passes its service's locked ones), cached for :data:`STORE_TTL` seconds."""

    def __init__(self, summaries: Callable[[SummaryQuery], SummaryPage] | None,
                 head: Callable[[str], Revision] | None, finals: frozenset[str],
                 *, at: Location | None = None) -> None:
        self._summaries, self._head, self._finals, self._at = summaries, head, finals, at
        self._lock = threading.Lock()
        self._read: tuple[float, dict[str, int], int] | None = None

    @classmethod
    def at(cls, where: Location, finals: frozenset[str]) -> StoreGauges:
        """Gauges of the store at ``where``, opened read-only for each reading (the
        scrape runs on a thread of its own, which may not share a connection)."""
        return cls(None, None, finals, at=where)

    def read(self) -> tuple[dict[str, int], int]:
        """``({state: sessions}, waiting sessions)``."""
        with self._lock:
            now = time.monotonic()
            if self._read is None or now - self._read[0] > STORE_TTL:
                by_state, waiting = self._count()
                self._read = (now, by_state, waiting)
            return self._read[1], self._read[2]

    def _count(self) -> tuple[dict[str, int], int]:
        if self._at is None:
            assert self._summaries is not None and self._head is not None
            return self._walk(self._summaries, self._head)
        with open_store(self._at, readonly=True) as opened:
            return self._walk(opened.summaries, opened.head)

    def _walk(self, summaries: Callable[[SummaryQuery], SummaryPage],
              head: Callable[[str], Revision]) -> tuple[dict[str, int], int]:
        by_state: Counter[str] = Counter()
        running: list[str] = []
        before: int | None = None
        while True:
            page = summaries(SummaryQuery(limit=MAX_PAGE, before=before))
            for item in page.items:
                by_state[item.fsm] += 1
                if item.fsm not in self._finals and len(running) < _HEADS:
                    running.append(item.sid)
            if page.next is None:
                break
            before = page.next
        waiting = 0
        for sid in running:
            try:
                waiting += _waits(head(sid))
            except Exception:  # deleted since the listing: not waiting
                continue
        return dict(by_state), waiting


def _histogram(name: str, doc: str, label: str, hists: dict[str, Histogram]) -> Metric:
    family = HistogramMetricFamily(name, doc, labels=[label])
    bounds = [*(str(b) for b in BUCKETS), "+Inf"]
    for key, hist in sorted(hists.items()):
        cumulative = list(accumulate(hist.counts))
        family.add_metric([key], list(zip(bounds, cumulative, strict=True)), hist.total)
    return family


class _Collector(Collector):
    def __init__(self, tally: Tally, gauges: StoreGauges | None) -> None:
        self.tally, self.gauges = tally, gauges

    def collect(self) -> Iterator[Metric]:
        t = self.tally.copy()
        steps = CounterMetricFamily("claimfsm_steps", "Steps run, by state, skill and "
                                    "envelope status.", labels=["state", "skill", "status"])
        for (state, skill, status), n in sorted(t.steps.items()):
            steps.add_metric([state, skill, status], n)
        yield steps
        yield CounterMetricFamily("claimfsm_commits", "Revisions committed by steps.",
                                  value=t.commits)
        yield CounterMetricFamily("claimfsm_conflicts", "Steps whose commit lost its "
                                  "compare-and-set (REV_CONFLICT).", value=t.conflicts)
        calls = CounterMetricFamily("claimfsm_tool_calls", "Tool call attempts, by tool and "
                                    "outcome (ok or the error code).", labels=["tool", "outcome"])
        for (tool, outcome), n in sorted(t.tool_calls.items()):
            calls.add_metric([tool, outcome], n)
        yield calls
        errors = CounterMetricFamily("claimfsm_errors", "Error codes of steps and tool calls.",
                                     labels=["source", "code"])
        for (source, code), n in sorted(t.errors.items()):
            errors.add_metric([source, code], n)
        yield errors
        yield _histogram("claimfsm_step_seconds", "Wall time of a step, by state.", "state",
                         t.step_seconds)
        yield _histogram("claimfsm_tool_seconds", "Wall time of a tool call attempt, by tool.",
                         "tool", t.tool_seconds)
        if self.gauges is not None:
            by_state, waiting = self.gauges.read()
            sessions = GaugeMetricFamily("claimfsm_sessions", "Sessions in the store, by "
                                         "the state of their head.", labels=["state"])
            for state, n in sorted(by_state.items()):
                sessions.add_metric([state], n)
            yield sessions
            yield GaugeMetricFamily("claimfsm_waiting_sessions", "Sessions waiting for a "
                                    "person's input or resume (the review queue's depth).",
                                    value=waiting)


def registry_for(tally: Tally, gauges: StoreGauges | None = None) -> CollectorRegistry:
    """A registry of its own holding the tally's and the store's metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(tally, gauges))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    """The Prometheus text exposition of ``registry``."""
    return generate_latest(registry)


def serve_metrics(registry: CollectorRegistry, port: int, host: str = "127.0.0.1") -> Any:
    """Serve ``registry`` at ``http://host:port/metrics`` on a daemon thread; returns the
    server (``.shutdown()`` stops it; ``.server_port`` is the port when ``port`` is 0)."""
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server
