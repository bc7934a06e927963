"""Structured logs of long-running commands (``--log-format json|text``): one line per
event on stderr, with the session's sid, rev and code where the event has them.

Only the fields an event names are written, never a claim's text, a tool's arguments or
a request's headers; a field whose name says it holds a secret (key, token, password,
authorization, cookie) is written as ``[redacted]`` in case a caller passes one.
"""

from __future__ import annotations

import logging
import re
import sys
from datetime import UTC, datetime
from typing import IO, Any, Literal

import orjson

__all__ = ["LOGGER", "LogFormat", "log_event", "setup_logging", "stop_logging"]

LogFormat = Literal["json", "text"]
#: The logger every event goes to; nothing is written until :func:`setup_logging`.
LOGGER = logging.getLogger("claimfsm.events")
LOGGER.propagate = False
LOGGER.addHandler(logging.NullHandler())
# Off whatever the root logger's level (Ray and others configure it): only
# setup_logging turns events on.
_OFF = logging.CRITICAL + 1
LOGGER.setLevel(_OFF)
_MINE: list[logging.Handler] = []  # the handlers setup_logging added
_SECRET = re.compile(r"key|token|secret|password|authori[sz]ation|cookie", re.IGNORECASE)
_FIELDS = "claimfsm_fields"


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = getattr(record, _FIELDS, {})
    return {k: "[redacted]" if _SECRET.search(k) else v for k, v in fields.items()}


def _ts(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "event", ...fields}`` as one JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"ts": _ts(record), "level": record.levelname.lower(),
                "event": record.getMessage(), **_fields(record)}
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    """``TS LEVEL event key=value ...`` for a person reading a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        pairs = " ".join(f"{k}={v}" for k, v in _fields(record).items() if v is not None)
        return f"{_ts(record)} {record.levelname.lower()} {record.getMessage()} {pairs}".rstrip()


def setup_logging(fmt: LogFormat, stream: IO[str] | None = None) -> logging.Handler:
    """Write events to ``stream`` (stderr) in ``fmt``; returns the handler
    (:func:`stop_logging` takes it off)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    LOGGER.addHandler(handler)
    _MINE.append(handler)
    LOGGER.setLevel(logging.INFO)
    return handler


def stop_logging(handler: logging.Handler) -> None:
    """Take ``handler`` off; with none left, events are off again."""
    LOGGER.removeHandler(handler)
    if handler in _MINE:
        _MINE.remove(handler)
    if not _MINE:
        LOGGER.setLevel(_OFF)


def log_event(event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``event`` with ``fields`` (when logging is set up; else nearly free)."""
    if LOGGER.isEnabledFor(level):
        LOGGER.log(level, event, extra={_FIELDS: fields})
