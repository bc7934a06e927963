"""Schemathesis hooks for tests/ui/test_ui_schemathesis.py (loaded through
``SCHEMATHESIS_HOOKS``).

JSON Schema's ``integer`` is a number with no fraction, so ``3.0`` is one and the
generators send it; the API refuses it on purpose (a revision number is a JSON integer,
issue 26; tests/ui/test_ui_hostile.py checks the refusal). The generated bodies get their
integral floats written as integers, the only change to what Schemathesis sends."""

from __future__ import annotations

from typing import Any

import schemathesis


def _ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v) for v in value]
    return value


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    """``body`` with integral floats as integers."""
    return _ints(body)
