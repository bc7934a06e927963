"""Spies on where values are consumed: how often a ``db`` value is parsed, and which
profile object a session is started with."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

__all__ = ["db_parses", "modules_loaded_by", "profiles_written"]


def db_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ``db`` value parsed from now on: a call of ``claimfsm.state.open.locate`` with
    text (a :class:`~claimfsm.state.open.Location` handed on is no parse), under whatever
    name a module imported it."""
    from claimfsm.state import open as opener

    original = opener.locate
    seen: list[str] = []

    def spy(db: Any) -> Any:
        if not isinstance(db, opener.Location):
            seen.append(os.fspath(db))
        return original(db)

    for module in list(sys.modules.values()):
        if (getattr(module, "__name__", "").startswith("claimfsm")
                and getattr(module, "locate", None) is original):
            monkeypatch.setattr(module, "locate", spy)
    return seen


def profiles_written(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every profile object whose ``config()`` is written into a new session from now on
    (``Profile.config`` is where a profile becomes session config)."""
    from claimfsm.engine.profile import Profile

    original = Profile.config
    seen: list[Any] = []

    def spy(self: Profile) -> dict[str, Any]:
        seen.append(self)
        return original(self)

    monkeypatch.setattr(Profile, "config", spy)
    return seen


_MODULES = """
import sys
from claimfsm.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\nMODULES " + " ".join(sorted(sys.modules)), file=sys.stderr)
"""


def modules_loaded_by(*args: str) -> set[str]:
    """Every module ``claimfsm ARGS`` loaded, run in a fresh interpreter (checked to exit 0)."""
    proc = subprocess.run([sys.executable, "-c", _MODULES, *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])
