"""Schemathesis (``st run --checks all``) against the served ``/api/v1/openapi.json`` on a
throwaway store: every operation, 25 examples each, deterministic generation so a run
is the same run every time. What it may not check, and why, is in tests/ui/schemathesis.toml
and docs/api.md."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.components import need_module

need_module("schemathesis", "dev")
need_module("uvicorn", "ui")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_schemathesis_finds_nothing(tmp_path: Path) -> None:
    import uvicorn  # noqa: F401  (needed by serve)

    from claimfsm.ui.app import create_app
    from tests.support.ui_helpers import make_service, serve

    service = make_service(tmp_path / "st.db")
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    assert st is not None, "the dev extra installs Schemathesis' st"
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.support.st_hooks",
           "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    try:
        with serve(create_app(service, db_label="st.db")) as url:
            run = subprocess.run(
                [st, "--config-file", str(HERE / "schemathesis.toml"), "run",
                 f"{url}/api/v1/openapi.json", "--checks", "all",
                 "--exclude-checks", "ensure_resource_availability",
                 "--max-examples", "25", "--generation-deterministic",
                 # A hang guard, not a performance figure: the first hybrid session
                 # loads the embedder, seconds on a loaded machine.
                 "--max-response-time", "120", "--no-color"],
                capture_output=True, text=True, env=env, cwd=tmp_path, timeout=1500)
    finally:
        service.close()
    tail = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert "22 passed" in run.stdout or " passed" in run.stdout, tail
    # It exercised the API, it did not just read the document.
    assert "generated" in run.stdout, tail
