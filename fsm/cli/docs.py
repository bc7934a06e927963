"""docs/cli.md, generated from the CLI itself so the reference never drifts from ``--help``.

``python -m claimfsm.cli.docs > docs/cli.md`` rewrites it; a test fails when they disagree.
"""

from __future__ import annotations

import click

__all__ = ["render"]

_INTRO = """# CLI reference

Generated from `claimfsm --help` by `python -m claimfsm.cli.docs > docs/cli.md` (a test checks
that this page and the code agree). Every command that touches sessions takes `--db PATH`
(default `claimfsm.db`, SQLite: sessions and the evidence index in one file). Errors print
`error: CODE: message` (or `{"error": {"code", "msg"}}` with `--json`) and exit non-zero;
no command prints a traceback for bad input.
"""


def _help(cmd: click.Command, name: str, parent: click.Context | None) -> str:
    ctx = click.Context(cmd, info_name=name, parent=parent, terminal_width=100,
                        max_content_width=100)
    return cmd.get_help(ctx).replace("\x08", "")


def _sections(group: click.Group, parent: click.Context, path: str) -> list[str]:
    parts: list[str] = []
    for name in group.list_commands(parent):
        cmd = group.get_command(parent, name)
        assert cmd is not None
        parts += [f"## `{path} {name}`", "", "```text", _help(cmd, name, parent), "```", ""]
        if isinstance(cmd, click.Group):  # a command with commands of its own (bench)
            ctx = click.Context(cmd, info_name=name, parent=parent, terminal_width=100,
                                max_content_width=100)
            parts += _sections(cmd, ctx, f"{path} {name}")
    return parts


def render(group: click.Group) -> str:
    """The markdown page for ``group`` and every command under it, sorted by name (a
    command's own commands follow it)."""
    settings = {**group.context_settings, "terminal_width": 100, "max_content_width": 100}
    root = click.Context(group, info_name="claimfsm", **settings)
    parts = [_INTRO, "```text", group.get_help(root), "```", ""]
    return "\n".join(parts + _sections(group, root, "claimfsm"))


if __name__ == "__main__":  # pragma: no cover - the generator entry point
    from claimfsm.cli.main import main

    click.echo(render(main), nl=False)
