"""The web inspector and its HTTP API (``claimfsm ui``), and the self-contained HTML
report (``claimfsm report``): sessions listed and searched, a session's diagram, timeline,
revisions, diffs and verdict, the CLI's operations as buttons and as ``/api/v1`` JSON, and
replay with the first divergence marked.

Part of fsm's tools: it may import the engine core, ``claimfsm.replay``, ``skills`` and
``state``; nothing but ``claimfsm.cli`` imports it. The web app needs the ``ui`` extra
(Starlette, uvicorn); :func:`render_report` and :func:`diagram_svg` do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claimfsm._base.lazy import lazy_exports
from claimfsm.ui.diagram import diagram_svg
from claimfsm.ui.diff import diff_values
from claimfsm.ui.report import render_report

if TYPE_CHECKING:
    from claimfsm.ui.app import create_app
    from claimfsm.ui.service import Service

__all__ = ["Service", "create_app", "diagram_svg", "diff_values", "render_report"]

# The web stack loads only when asked for: a report needs no Starlette.
__getattr__ = lazy_exports(__name__, {"create_app": "claimfsm.ui.app",
                                      "Service": "claimfsm.ui.service"})
