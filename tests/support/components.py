"""Real components the tests start (PostgreSQL, Ray, Chromium): present, or skip/fail.

A developer's machine without one skips its tests with a plain reason ("no PostgreSQL:
..."); CI sets ``CLAIMFSM_REQUIRE_ALL=1`` and the same situation fails the test, so CI can
never pass by skipping them. The skipped components are summed up at the end of the run
(``tests/conftest.py``).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

__all__ = ["REQUIRE_ALL", "missing", "need_module"]

REQUIRE_ALL = os.environ.get("CLAIMFSM_REQUIRE_ALL") == "1"


def missing(component: str, why: str) -> NoReturn:
    """Skip (or, under ``CLAIMFSM_REQUIRE_ALL=1``, fail) because ``component`` is absent.

    Works in a test and at a module's top level (the whole module skips, or fails to
    collect).
    """
    msg = f"no {component}: {why}"
    if REQUIRE_ALL:
        pytest.fail(f"{msg} (CLAIMFSM_REQUIRE_ALL=1: install it, see .ci/run)", pytrace=False)
    pytest.skip(msg, allow_module_level=True)


def need_module(name: str, extra: str) -> ModuleType:
    """``import name``, or :func:`missing` naming the extra that installs it. Use this, not
    ``pytest.importorskip``, which skips even under ``CLAIMFSM_REQUIRE_ALL=1``."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(name, f"{exc} (pip install -e '.[{extra}]')")
