"""The ``claimfsm`` command line: one module per group of commands (sessions in
``main``, record/replay/export, eval, train, bench, fsck/compact, docs), options shared in
``common``.

The top of the layering: it may import every other part of fsm (core, replay, testing,
eval, bench), ``skills`` and ``state``; nothing imports it.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
import threading
import types
from importlib.machinery import ModuleSpec
from typing import Any

__all__ = ["ONE_SHOT", "main"]

#: Commands that do one bounded thing (one transition, one read) and exit: they run with
#: the cyclic garbage collector off and, run by the console script, end their process
#: without the interpreter's teardown (see :func:`main`).
ONE_SHOT: frozenset[str] = frozenset({"step", "start", "show", "history", "sessions",
                                      "rollback", "fork"})


#: The values of ``PYDANTIC_DISABLE_PLUGINS`` with which pydantic loads no plugin at all.
_NO_PLUGINS = ("__all__", "1", "true")
_LOADER = "pydantic.plugin._loader"


def _real_loader() -> types.ModuleType:
    """pydantic's own plugin loader, in place of the stand-in from now on."""
    if getattr(sys.modules.get(_LOADER), "get_plugins", None) is _get_plugins:
        del sys.modules[_LOADER]
    return importlib.import_module(_LOADER)


def _get_plugins() -> Any:
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") in _NO_PLUGINS:
        return ()
    return _real_loader().get_plugins()  # plugins turned on after all: pydantic's loader


def _loader_attribute(name: str) -> Any:
    # Any other name (a later pydantic may import more from the module) is the real
    # loader's: asking for one hands over to it.
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_real_loader(), name)


def _skip_plugin_loader() -> None:
    """Stand in for pydantic's plugin loader while plugins are disabled."""
    # The first validator pydantic compiles imports its plugin loader, whose first line
    # imports importlib.metadata (with email, csv, zipfile, socket: ~10 ms, a tenth of
    # what `step` spends above the floor) to look for plugins that the variable has
    # just turned off. pydantic imports one name from it, get_plugins, on each
    # validator it builds; this one answers as pydantic's does: no plugins while the
    # variable disables them all, pydantic's loader otherwise (and for any other name).
    if _LOADER in sys.modules or os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in _NO_PLUGINS:
        return
    loader = types.ModuleType(_LOADER, "claimfsm.cli's stand-in: no plugins while disabled")
    loader.__spec__ = ModuleSpec(_LOADER, None)  # what importlib.util.find_spec returns
    loader.__dict__.update(get_plugins=_get_plugins, __getattr__=_loader_attribute)
    sys.modules[_LOADER] = loader


def _exit_now(exc: SystemExit) -> None:
    """End the process of a one-shot command that has finished, skipping the
    interpreter's teardown; returns (and the interpreter ends as usual) when it cannot."""
    # The teardown frees every module, class and schema start-up built (and collects
    # them once more), ~6% of a step's instructions, in a process about to end. What of
    # it can be seen still happens, in its order: the exit handlers run, then the
    # standard streams are flushed. With another thread alive (an exporter's, say) the
    # interpreter ends as usual: it waits for such threads first.
    code = 0 if exc.code is None else exc.code
    if not isinstance(code, int) or not 0 <= code <= 255 or threading.active_count() > 1:
        return
    atexit._run_exitfuncs()  # and forgets them: none runs twice if we return below
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: the interpreter reports it as it does
        return
    os._exit(code)


def main(*args: Any, **kwargs: Any) -> Any:
    """Run the ``claimfsm`` command (the console script's entry point)."""
    # pydantic looks for plugins by scanning every installed distribution's entry points
    # when the first model is built: ~15 ms of each command's start-up in a full
    # environment, for plugins the CLI never uses. Set the variable yourself to keep them.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _skip_plugin_loader()
    # A one-shot command's start-up creates ~10^5 objects (modules, classes, pydantic
    # schemas) and frees few: the collector's passes over them were ~8% of a `step`'s
    # CPU. Its cycles, if any, go when the process exits. Every other command (servers,
    # batches, whole runs) keeps the collector. The console script (no arguments given:
    # sys.argv) leaves it off, as a collection at exit would cost what was saved; a
    # caller passing the arguments gets its own setting back.
    argv = kwargs.get("args", args[0] if args else None)
    first = (sys.argv[1:] if argv is None else list(argv))[:1]
    restore = argv is not None and gc.isenabled()
    if first and first[0] in ONE_SHOT:
        gc.disable()
    try:
        from claimfsm.cli.main import main as command

        return command(*args, **kwargs)
    except SystemExit as exc:
        # The console script's one-shot commands only (argv None): a program calling
        # main with its arguments keeps its process.
        if argv is None and first and first[0] in ONE_SHOT:
            _exit_now(exc)
        raise
    finally:
        if restore:
            gc.enable()
