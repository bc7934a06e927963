"""Commands run without the right to write a read-only file.

Root writes any file whatever its mode (the capability ``CAP_DAC_OVERRIDE``), and CI runs
as root: a test of what a command does with a file it may not write would never see the
failure there. :func:`cli_unprivileged` runs the command in a child process; as root, the
child first drops ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` from its capability
bounding set, so the program it starts has root's uid (it still reads root's own files,
the interpreter among them) but obeys file modes like any user.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

from tests.support.components import missing

__all__ = ["ROOT", "cli_unprivileged", "make_readonly"]

ROOT = os.geteuid() == 0
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2
# Loaded here, not in the forked child, which should do no more than the system call.
_LIBC = ctypes.CDLL(None, use_errno=True)


def _can_drop() -> str | None:
    """Why the capabilities cannot be dropped here, or ``None`` when they can."""
    probe = subprocess.run([sys.executable, "-c", "pass"], preexec_fn=_drop,
                           capture_output=True, text=True, check=False)
    return None if probe.returncode == 0 else probe.stderr.strip()[-200:] or "prctl failed"


def _drop() -> None:
    # Runs in the forked child before exec.
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if _LIBC.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) refused")


def make_readonly(path: Path) -> None:
    """``path`` readable, and writable by no process without ``CAP_DAC_OVERRIDE``."""
    path.chmod(0o444)


def cli_unprivileged(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``claimfsm ARGS`` in a child process that file modes bind, in ``cwd``."""
    if ROOT:
        why = _can_drop()
        if why is not None:
            missing("unprivileged child", f"root cannot drop CAP_DAC_OVERRIDE here: {why}")
    return subprocess.run(
        [sys.executable, "-c", "from claimfsm.cli.main import main; main()", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
        preexec_fn=_drop if ROOT else None)
