"""The ``claimfsm`` command line: one module per group of commands (sessions in
``main``, record/replay/export, eval, train, bench/fsck/compact, docs), options shared in
``common``.

The top of the layering: it may import every other part of fsm (core, replay, testing,
eval, bench), ``skills`` and ``state``; nothing imports it.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["main"]


def main(*args: Any, **kwargs: Any) -> Any:
    """Run the ``claimfsm`` command (the console script's entry point)."""
    # pydantic looks for plugins by scanning every installed distribution's entry points
    # when the first model is built: ~15 ms of each command's start-up in a full
    # environment, for plugins the CLI never uses. Set the variable yourself to keep them.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from claimfsm.cli.main import main as command

    return command(*args, **kwargs)
