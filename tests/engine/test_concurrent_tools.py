"""RETRIEVAL's searches at the same time against a real HTTP server (tests/support/
search_server.py) whose answers come after a random 0-40 ms, so they finish in a random
order: 50 sessions record the same bytes up to EXTRACT (where every search has been made),
and replay strictly; the session's deadline cancels searches still waiting for their
answer."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import orjson
import pytest

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.runtime import Engine
from claimfsm.replay.runner import replay_record
from claimfsm.replay.write import engine_record
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.executor import Executor
from claimfsm.skills.tools.http.config import parse_sources
from tests.support.search_server import Served, start

CLAIM = ("Neil Armstrong and Buzz Aldrin landed the Apollo 11 lunar module Eagle on the Moon "
         "in July 1969 near the Sea of Tranquility after the Saturn V launch from Florida and "
         "Yuri Gagarin flew the Vostok 1 spacecraft around the Earth in April 1961.")


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    served = start()
    yield served
    served.stop()


def table(url: str, *, wiki: str = "/jitter/40", other: str = "/jitter/40",
          timeout: float = 5) -> dict[str, Any]:
    return {
        "wiki": {"kind": "mediawiki", "url": f"{url}{wiki}/w/api.php", "timeout": timeout},
        "web": {"kind": "opensearch", "url": f"{url}{other}/docs/_search", "timeout": timeout},
        "news": {"kind": "mediawiki", "url": f"{url}{other}/w/api.php", "timeout": timeout},
    }


def engine(url: str, **kwargs: Any) -> Engine:
    cfg = EngineConfig(clock=kwargs.pop("clock", None), sources=parse_sources(table(url, **kwargs)))
    eng = Engine.open(None, config=cfg)
    eng.driver.new_sid = lambda: "S1"
    return eng


def test_fifty_sessions_in_random_completion_order_record_the_same_bytes(
        server: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    finished: list[str] = []
    lock = threading.Lock()
    handle = Executor._handle

    def spy(self: Executor, tool: Any, params: Any, deadline: Any) -> Any:
        out = handle(self, tool, params, deadline)
        with lock:
            finished.append(f"{tool.name}:{params.model_dump_json()}")
        return out

    monkeypatch.setattr(Executor, "_handle", spy)
    records: set[bytes] = set()
    orders: set[tuple[str, ...]] = set()
    gathered = 0
    for _ in range(50):
        finished.clear()
        with engine(server.url, clock=FixedClock(tick=timedelta(milliseconds=2))) as eng:
            sid = eng.start(CLAIM).sid
            while eng.store.head(sid).fsm in ("PARSE_CLAIM", "RETRIEVAL"):
                eng.driver.step(sid)
            head = eng.store.head(sid)
            assert head.fsm == "EXTRACT"
            record = engine_record(eng, head.sid)
            history = eng.store.history(head.sid)
        # RETRIEVAL's first run of plan steps gathered all of its searches in one step.
        runs = [len(r.state.steps) for r in history if r.skill == "retrieve"
                and any(e["type"] == "ToolCalls" for e in r.events)]
        gathered = max(gathered, *runs)
        records.add(record.to_bytes())
        orders.add(tuple(finished))
    assert gathered >= 8
    assert len(orders) > 1  # the answers did come back in other orders ...
    assert len(records) == 1  # ... and every record is the same, byte for byte
    replayed = replay_record(record)
    assert replayed.ok, replayed


def test_the_deadline_cancels_the_searches_still_waiting(server: Served) -> None:
    # The planned searches go to wiki, which answers; the claim-level web_search asks
    # every backend, and web and news never answer in time (their timeout is far away).
    with engine(server.url, wiki="/delay/50", other="/fault/hang", timeout=60) as eng:
        sid = eng.start(CLAIM, config={"deadline_s": 4.0}).sid
        head = eng.driver.run(sid)
        assert head.fsm == "FAILED" and head.state.error is not None
        assert head.state.error["code"] == "DEADLINE_EXCEEDED"
        calls = [c for e in head.events if e["type"] == "ToolCalls" for c in e["calls"]]
    waiting = [c for c in calls if c["tool"] == "web_search"]
    assert waiting and all(c["code"] == "DEADLINE_EXCEEDED" and "cancelled" in c["message"]
                           for c in waiting)
    answered = [c for c in calls if c["tool"] == "search"]
    assert answered and all(c["ok"] for c in answered)
    assert [c["id"] for c in calls] == sorted((c["id"] for c in calls),
                                              key=lambda i: int(i[1:]))  # plan order


def test_web_search_asks_its_backends_at_the_same_time() -> None:
    served = start()  # its own server: releasing the held requests is for good
    try:
        held = f"{served.url}/hangon/moon"
        table = {"wiki": {"kind": "mediawiki", "url": f"{held}/w/api.php"},
                 "web": {"kind": "opensearch", "url": f"{held}/docs/_search"},
                 "news": {"kind": "json", "url": f"{held}/json/search?q={{q}}&n={{lim}}",
                          "hits": "results", "fields": {"id": "key", "text": "body"}}}
        with Engine.open(None, config=EngineConfig(sources=parse_sources(table))) as eng:
            assert eng.driver.tools is not None
            executor = eng.driver.tools(eng.start("x").state, eng.driver.clock)
            result: list[Any] = []
            thread = threading.Thread(target=lambda: result.append(executor.call(
                "web_search", {"q": "moon landing", "lim": 3})))
            thread.start()
            waiting: list[Any] = []
            for _ in range(600):  # the three requests are held at the server together
                waiting = [r for r in _requests(served.url) if r["state"] == "waiting"]
                if len(waiting) == 3:
                    break
                time.sleep(0.05)
            _requests(served.url, "/release")
            thread.join(60)
        assert len(waiting) == 3
        assert result and result[0].ok and result[0].value["hits"]
    finally:
        served.stop()


def _requests(url: str, path: str = "/requests") -> Any:
    with urllib.request.urlopen(url + path, timeout=10) as resp:
        return orjson.loads(resp.read())
