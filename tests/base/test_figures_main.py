"""A benchmark script's entry point: a bad --json folder stops before the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claimfsm._base.json import figures_main


def test_a_missing_folder_stops_before_the_run(tmp_path: Path) -> None:
    ran = []
    with pytest.raises(SystemExit) as stop:
        figures_main(lambda: ran.append(1), ["--json", str(tmp_path / "nodir" / "x.json")])
    assert "NOT_FOUND: --json" in str(stop.value.code) and not ran


def test_figures_go_to_the_file_or_to_stdout(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.json"
    figures_main(lambda: {"a": 1}, ["--json", str(out)])
    assert json.loads(out.read_bytes()) == {"a": 1}
    figures_main(lambda: {"b": 2}, [])
    assert json.loads(capsys.readouterr().out) == {"b": 2}
