"""Structured logs: one JSON object (or text line) per event with sid, rev and code; a
field named like a secret is never written; nothing is written until logging is set up.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from claimfsm.engine.runtime import Engine
from claimfsm.observe.logs import LOGGER, log_event, setup_logging, stop_logging
from claimfsm.observe.observer import Observer


@pytest.fixture()
def stream() -> Iterator[tuple[io.StringIO, str]]:
    handlers = list(LOGGER.handlers)
    out = io.StringIO()
    yield out, "json"
    for handler in LOGGER.handlers:
        if handler not in handlers:
            stop_logging(handler)
    assert not LOGGER.isEnabledFor(logging.INFO), (LOGGER.handlers, LOGGER.level)


def test_every_step_is_one_json_line_with_sid_rev_and_code(
    stream: tuple[io.StringIO, str]
) -> None:
    out, _ = stream
    setup_logging("json", out)
    eng = Engine.open(None)
    eng.driver.observer = Observer()
    try:
        sid = eng.start("Paris is the capital of France.", config={"max_tool_calls": 1}).sid
        head = eng.driver.run(sid)
    finally:
        eng.close()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(lines) == head.rev  # one per step, each committed
    assert [line["rev"] for line in lines] == list(range(1, head.rev + 1))
    assert all(line["event"] == "step" and line["sid"] == sid for line in lines)
    last = lines[-1]
    assert last["code"] == head.state.error["code"] and last["level"] == "warning"
    assert all(line["code"] is None for line in lines[:-1])
    assert "Paris" not in out.getvalue()  # the claim's text is not an event field


def test_text_lines_and_secrets(stream: tuple[io.StringIO, str]) -> None:
    out, _ = stream
    setup_logging("text", out)
    log_event("request", sid="s1", rev=3, code="BAD_INPUT", api_key="k-123",
              Authorization="Bearer k-123", session_token="t")
    line = out.getvalue().strip()
    assert " info request sid=s1 rev=3 code=BAD_INPUT " in line
    assert "k-123" not in line and line.count("[redacted]") == 3


def test_nothing_is_written_before_logging_is_set_up(
    stream: tuple[io.StringIO, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert not LOGGER.isEnabledFor(logging.INFO), (LOGGER.handlers, LOGGER.level)
    log_event("step", sid="s", rev=1, code=None)
    assert capsys.readouterr().err == ""
