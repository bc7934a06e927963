"""docs/cli.md and docs/errors.md, generated from the code so they never drift from it.

``python -m claimfsm.cli.docs > docs/cli.md`` rewrites the CLI reference from ``--help``,
``python -m claimfsm.cli.docs errors > docs/errors.md`` the error codes from
:class:`~claimfsm._base.errors.ErrorCode`; a test fails when a page and the code disagree.
"""

from __future__ import annotations

import sys

import click

from claimfsm._base.errors import ErrorCode

__all__ = ["render", "render_errors"]

_INTRO = """# CLI reference

Generated from `claimfsm --help` by `python -m claimfsm.cli.docs > docs/cli.md` (a test checks
that this page and the code agree). Every command that touches sessions takes `--db PATH`
(default `claimfsm.db`, SQLite: sessions and the evidence index in one file). Errors print
`error: CODE: message` (or `{"error": {"code", "msg"}}` with `--json`) and exit non-zero
(errors.md lists every code with its exit status); no command prints a traceback for bad
input.
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


_ERRORS_INTRO = """# Error codes

Generated from `claimfsm.ErrorCode` by `python -m claimfsm.cli.docs errors > docs/errors.md`
(a test checks that this page and the code agree).

Every exception claimfsm raises is a `claimfsm.ClaimFsmError`: a stable `code` (a member of
`ErrorCode`, a `StrEnum`: it compares equal to its string), a message `msg` for people, and
typed attributes that say where when they apply: `field` (the input field, option or file),
`sid` (the session), `rev` (the revision); a few errors add their own (`problems` of
`BAD_MACHINE`, `limit` of `INPUT_TOO_LARGE`, `expected` and `head` of `REV_CONFLICT`).
`to_dict()` is `{"code", "msg"}`, the shape of an error envelope's `e`. Expected failures are
not exceptions: a skill answers with an error envelope, a tool call fails with a code, fsck
reports a broken link; they use the same codes. A custom skill or tool may use codes of its
own (any `UPPER_SNAKE` string); the codes below are the library's.

- **CLI exit**: the status of a command that reports the code. `2`: it stops with
  `error: CODE: message` (`{"error": {"code", "msg"}}` with `--json`). `1`: the code comes
  back in a step's envelope or a tool call (`step`, `verify` and `skill` exit 1 whenever the
  envelope is not `ok`, whatever its code), in fsck's report or in a batch's line. `0`: a
  line `ingest` reports and skips. `-`: no command reports it.
- **HTTP**: the status of an `/api/v1` answer `{"error": {"code", "msg", "field"?}}` with
  the code. Every code has one, also those the API only carries inside a 200 answer (a
  step's envelope, a chain check): raised to the API, they answer with it rather than a
  bare 500 (a test walks the whole list). A custom code (a user's skill or tool) is a
  500. Each operation of the OpenAPI document (`/api/v1/openapi.json`) declares the codes
  it may answer, under these statuses.
"""

# Where each group of codes starts, in ErrorCode's order.
_SECTIONS = {
    ErrorCode.CLAIMFSM_ERROR: "The engine: contract errors",
    ErrorCode.RETRY_NOT_DUE: "The engine: a step's answer",
    ErrorCode.NO_CLAIMS: "Skills: error envelopes",
    ErrorCode.TOOL_ERROR: "Tools: failed calls",
    ErrorCode.STORE_ERROR: "Stores",
    ErrorCode.REV_GAP: "fsck: the first broken link of a session's hash chain",
    ErrorCode.BAD_LINE: "ingest: lines and files",
    ErrorCode.BAD_RECORD: "Replay and records",
    ErrorCode.BAD_DATASET: "eval and train",
    ErrorCode.BAD_CLAIMS: "batch",
    ErrorCode.OPEN_FAILED: "The command line and the HTTP API",
}


def render_errors() -> str:
    """The markdown page of every :class:`ErrorCode`: its meaning, exit and HTTP status."""
    parts = [_ERRORS_INTRO.rstrip("\n")]
    for code in ErrorCode:
        heading = _SECTIONS.get(code)
        if heading is not None:
            parts += ["", f"## {heading}", "", "| code | meaning | CLI exit | HTTP |",
                      "|---|---|---|---|"]
        exit_, http = ("-" if v is None else str(v) for v in (code.exit, code.http))
        parts.append(f"| `{code}` | {code.meaning} | {exit_} | {http} |")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":  # pragma: no cover - the generator entry point
    if sys.argv[1:] == ["errors"]:
        click.echo(render_errors(), nl=False)
    else:
        from claimfsm.cli.main import main

        click.echo(render(main), nl=False)
