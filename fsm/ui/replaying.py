"""Replay for the UI: run a record (strict or tools mode) and lay out each of its lines
with the first divergence located at its line and JSON path."""

from __future__ import annotations

from typing import Any

from claimfsm.engine.errors import BadInput
from claimfsm.replay.diff import short
from claimfsm.replay.record import Rewind, Step, parse_record
from claimfsm.replay.runner import MODES, replay_record

__all__ = ["replay_bytes"]


def replay_bytes(data: bytes, source: str, mode: str) -> dict[str, Any]:
    """Replay the record in ``data``; raises ``RecordError`` (``BAD_RECORD``) for a record
    that cannot be read and :class:`BadInput` for an unknown mode. The result holds the
    report, one row per line, and the diverging line's JSON with the path to mark."""
    if mode not in MODES:
        raise BadInput(f"mode: {mode!r} is not one of {', '.join(MODES)}", field="mode")
    record = parse_record(data, source=source)
    report = replay_record(record, mode)
    lines: list[dict[str, Any]] = []
    line_json: dict[str, Any] | None = None
    for n, entry in enumerate(record.entries, start=2):  # line 1 is the header
        if isinstance(entry, Step):
            env = entry.envelope
            code = (env.get("e") or {}).get("code", "")
            lines.append({"line": n, "t": "step", "rev": entry.rev, "skill": entry.skill,
                          "move": f"{entry.before} -> {entry.after}",
                          "status": f"{env.get('s', '-')} {code}".strip()})
        elif isinstance(entry, Rewind):
            lines.append({"line": n, "t": "rewind", "rev": entry.rev, "skill": None,
                          "move": f"to {entry.to}", "status": ""})
        d = report.divergence
        if d is not None and d.line == n:
            line_json = entry.model_dump(mode="json")
    d = report.divergence
    highlight = None
    if d is not None:
        # Envelope paths are relative to the envelope; input/calls/after name the line's field.
        highlight = d.path
        if d.kind == "ENVELOPE_MISMATCH":
            highlight = "envelope" if d.path == "(root)" else f"envelope.{d.path}"
    return {"report": report, "lines": lines, "line_json": line_json or {},
            "highlight": highlight,
            "expected": short(d.expected, 300) if d is not None else None,
            "actual": short(d.actual, 300) if d is not None else None}
