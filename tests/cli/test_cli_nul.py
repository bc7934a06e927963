"""An argument holding a NUL byte (only a caller of ``main([...])`` can pass one; a
shell cannot) is refused by the command group with a code: it used to reach click's
path checks and end in ``INTERNAL: ValueError: embedded null byte``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main


@pytest.mark.parametrize("argv", [["bench", "--json", "a\x00b"], ["batch", "\x00"],
                                  ["eval", "d.jsonl", "--corpus", "c\x00"],
                                  ["ingest", "\x00"], ["show", "s\x00"]])
def test_a_nul_byte_in_an_argument_is_bad_input(argv: list[str]) -> None:
    res = CliRunner().invoke(main, argv)
    assert res.exit_code == 2
    n = next(i for i, a in enumerate(argv, start=1) if "\x00" in a)
    assert res.output == f"error: BAD_INPUT: argument {n} holds a NUL byte\n"
