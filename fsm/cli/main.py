"""``claimfsm``: drive, inspect and test claim-verification sessions.

Every command takes ``--db PATH`` (default ``claimfsm.db``, SQLite) and most take
``--json`` for scripts. Errors print a stable code and a message and exit non-zero;
no command prints a traceback for bad input.

Commands load lazily: the group knows each command's module by name and imports only
the one being run, so ``claimfsm step`` never pays for eval, training or the benchmark.
A new command is a module in this package plus one line in :data:`COMMANDS`.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import click

__all__ = ["COMMANDS", "main"]

# name -> "module:attribute" of the click command.
COMMANDS: dict[str, str] = {
    "verify": "claimfsm.cli.session:verify",
    "start": "claimfsm.cli.session:start",
    "step": "claimfsm.cli.step:step",
    "show": "claimfsm.cli.read:show",
    "history": "claimfsm.cli.read:history",
    "sessions": "claimfsm.cli.read:sessions",
    "rollback": "claimfsm.cli.session:rollback",
    "fork": "claimfsm.cli.session:fork",
    "skill": "claimfsm.cli.skill:skill",
    "diagram": "claimfsm.cli.skill:diagram",
    "ingest": "claimfsm.cli.ingest:ingest",
    "demo": "claimfsm.cli.demo:demo",
    "replay": "claimfsm.cli.replay:replay",
    "export": "claimfsm.cli.replay:export",
    "eval": "claimfsm.cli.eval:eval_command",
    "train": "claimfsm.cli.train:train_command",
    "bench": "claimfsm.cli.bench:bench",
    "fsck": "claimfsm.cli.upkeep:fsck",
    "compact": "claimfsm.cli.upkeep:compact",
    "delete": "claimfsm.cli.retention:delete",
    "prune": "claimfsm.cli.retention:prune",
    "batch": "claimfsm.cli.batch:batch",
    "ui": "claimfsm.cli.ui:ui",
    "report": "claimfsm.cli.ui:report",
    "check-compat": "claimfsm.cli.compat:check_compat",
    "input": "claimfsm.cli.people:input_command",
    "resume": "claimfsm.cli.people:resume",
    "edit": "claimfsm.cli.people:edit",
    "tick": "claimfsm.cli.people:tick",
    "keys": "claimfsm.cli.keys:keys",
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command is used, and
    the last line of defence against a traceback: an error no command expected becomes
    ``error: INTERNAL: ...`` and exit 2 (``CLAIMFSM_DEBUG=1`` shows the traceback)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Text arguments (claims, sids) must be valid UTF-8: invalid bytes arrive as lone
        # surrogates that no store or JSON document can hold. Existing paths may keep them.
        for n, arg in enumerate(args, start=1):
            # A NUL byte never comes from a shell (execve's strings end at one), only from
            # a caller of main([...]); click's path checks would raise ValueError on it.
            if "\x00" in arg:
                _stop("BAD_INPUT", f"argument {n} holds a NUL byte")
            try:
                arg.encode("utf-8")
            except UnicodeEncodeError:
                if not os.path.exists(arg):
                    _stop("BAD_INPUT", f"argument {n} is not valid UTF-8 text")
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.Abort,
                SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            if os.environ.get("CLAIMFSM_DEBUG") == "1":
                raise
            _stop("INTERNAL", f"{type(exc).__name__}: {exc} (a bug: please report it with "
                  "the command; CLAIMFSM_DEBUG=1 shows where)")

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        where = COMMANDS.get(cmd_name)
        if where is None:
            return None
        module, attr = where.split(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


def _stop(code: str, msg: str) -> NoReturn:
    # The error codes load here, not with the group: ``claimfsm --help`` stays cheap.
    from claimfsm._base.errors import exit_status

    click.echo(f"error: {code}: {msg}", err=True)
    sys.exit(exit_status(code))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="claimfsm")
def main() -> None:
    """Verify factual claims step by step with an explicit, replayable state machine.

    A session moves PARSE_CLAIM -> RETRIEVAL -> EXTRACT -> VERIFY -> AGGREGATE -> DONE;
    every step commits one revision you can show, rewind or fork.
    """
