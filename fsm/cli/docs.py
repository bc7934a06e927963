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


def render(group: click.Group) -> str:
    """The markdown page for ``group`` and every command under it, sorted by name."""
    settings = {**group.context_settings, "terminal_width": 100, "max_content_width": 100}
    root = click.Context(group, info_name="claimfsm", **settings)
    parts = [_INTRO, "```text", group.get_help(root), "```", ""]
    for name in group.list_commands(root):
        cmd = group.get_command(root, name)
        assert cmd is not None
        parts += [f"## `claimfsm {name}`", "", "```text", _help(cmd, name, root), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":  # pragma: no cover - the generator entry point
    from claimfsm.cli.main import main

    click.echo(render(main), nl=False)
