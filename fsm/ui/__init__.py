"""The web inspector and its HTTP API (``claimfsm ui``), and the self-contained HTML
report (``claimfsm report``): sessions listed and searched, a session's diagram, timeline,
revisions, diffs and verdict, the CLI's operations as buttons and as ``/api/v1`` JSON, and
replay with the first divergence marked.

Part of fsm's tools: it may import the engine core, ``claimfsm.replay``, ``skills`` and
``state``; nothing but ``claimfsm.cli`` imports it. The web app needs the ``ui`` extra
(Starlette, uvicorn); :func:`render_report` and :func:`diagram_svg` do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claimfsm.ui.diagram import diagram_svg
from claimfsm.ui.diff import diff_values
from claimfsm.ui.report import render_report

if TYPE_CHECKING:
    from claimfsm.ui.app import create_app
    from claimfsm.ui.service import Service

__all__ = ["Service", "create_app", "diagram_svg", "diff_values", "render_report"]


def __getattr__(name: str) -> Any:
    # The web stack loads only when asked for: a report needs no Starlette.
    if name == "create_app":
        from claimfsm.ui.app import create_app

        return create_app
    if name == "Service":
        from claimfsm.ui.service import Service

        return Service
    raise AttributeError(name)
