"""A benchmark's ``--json`` file is checked before the benchmark runs (a missing folder
used to fail after the whole run, losing its figures), and a write that fails at the end
is a code, with the table already printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each benchmark replaced by a stub that notes it ran and reports one figure."""
    import claimfsm.batch.bench as batch_bench
    import claimfsm.bench.run as engine_bench

    ran: list[str] = []

    class Report:
        meta: ClassVar[dict[str, Any]] = {"cpus": 2, "python": "3", "sqlite": "3",
                                          "platform": "x", "reps": 1, "seconds": 0.0}

        def to_json(self) -> dict[str, Any]:
            return {"figure": 1}

    def engine(*args: Any, **kwargs: Any) -> Report:
        ran.append("engine")
        return Report()

    def batch(**kwargs: Any) -> dict[str, Any]:
        ran.append("batch")
        return {"machine": {}, "claims": [], "commits": [], "goals": {"g": True}}

    monkeypatch.setattr(engine_bench, "run_bench", engine)
    monkeypatch.setattr(engine_bench, "format_table", lambda report: "the table")
    monkeypatch.setattr(batch_bench, "run_bench", batch)
    monkeypatch.setattr(batch_bench, "format_table", lambda report: "the table")
    return ran


@pytest.mark.parametrize("args", [["bench", "--quick"], ["bench", "batch"], ["bench", "ui"]])
def test_a_json_file_in_a_missing_folder_is_refused_before_the_run(
        runs: list[str], tmp_path: Path, args: list[str]) -> None:
    target = tmp_path / "nodir" / "x.json"
    res = CliRunner().invoke(main, [*args, "--json", str(target)])
    assert res.exit_code == 2
    assert f"error: NOT_FOUND: --json {target}: no directory {target.parent}" in res.output
    assert runs == [] and not target.parent.exists()


@pytest.mark.parametrize("args", [["bench", "--quick"], ["bench", "batch"]])
def test_the_figures_are_written_where_asked(runs: list[str], tmp_path: Path,
                                             args: list[str]) -> None:
    target = tmp_path / "x.json"
    res = CliRunner().invoke(main, [*args, "--json", str(target)])
    assert res.exit_code == 0, res.output
    assert len(runs) == 1 and orjson.loads(target.read_bytes())
    assert f"wrote {target}" in res.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_write_that_fails_after_the_run_is_a_code_after_the_table(runs: list[str]) -> None:
    res = CliRunner().invoke(main, ["bench", "--quick", "--json", "/dev/full"])
    assert res.exit_code == 2 and runs == ["engine"]
    assert "the table" in res.stdout  # the figures were printed before the write failed
    assert "error: OUT_WRITE_FAILED: --json /dev/full: No space left on device" in res.stderr
