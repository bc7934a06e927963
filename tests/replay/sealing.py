"""Record lines edited on purpose and sealed again: what a genuine record looks like to a
replay whose engine now behaves otherwise (the divergence tests), as opposed to an edit
of a sealed line, which is RECORD_TAMPERED before anything runs."""

from __future__ import annotations

from typing import Any

import orjson

from claimfsm.replay.seal import SEAL_KEY, seal_line


def resealed(objs: list[dict[str, Any]]) -> bytes:
    """The lines of ``objs`` (parsed record lines, edited) sealed again."""
    return b"".join(seal_line({k: v for k, v in o.items() if k != SEAL_KEY}) for o in objs)


def unsealed(objs: list[dict[str, Any]]) -> bytes:
    """The lines of ``objs`` as they are (an edit keeps the old seal)."""
    return b"".join(orjson.dumps(o) + b"\n" for o in objs)


def reseal(line: bytes) -> bytes:
    """One edited record line (no newline) sealed again (no newline)."""
    return resealed([orjson.loads(line)])[:-1]
