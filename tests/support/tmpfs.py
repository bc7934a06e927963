"""A small tmpfs the test mounts itself, to fill up (ENOSPC) or remount read-only (EROFS).

Mounting needs root and a kernel that lets this process mount (CI runs as root in a
container that can). Elsewhere the test skips saying why, and fails instead under
``CLAIMFSM_REQUIRE_ALL=1`` (:func:`tests.support.components.missing`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.components import missing

__all__ = ["mounted_tmpfs", "remount"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, check=False)


@contextmanager
def mounted_tmpfs(where: Path, size: int) -> Iterator[Path]:
    """A tmpfs of ``size`` bytes mounted at ``where`` (created) for the block; unmounted
    after it, whatever happened."""
    why = None
    if os.geteuid() != 0:
        why = "mounting a small file system to fill up needs root (CI runs as root)"
    elif shutil.which("mount") is None:
        why = "no mount command"
    where.mkdir(parents=True, exist_ok=True)
    if why is None:
        done = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                    str(where))
        if done.returncode != 0:
            why = f"mount -t tmpfs failed here: {done.stderr.strip() or done.returncode}"
    if why is not None:
        missing("tmpfs mount", why)
    try:
        yield where
    finally:
        _run("umount", "-l", str(where))


def remount(where: Path, options: str) -> None:
    """Remount the tmpfs at ``where`` with ``options`` (``size=...``, ``ro``, ``rw``)."""
    done = _run("mount", "-o", f"remount,{options}", str(where))
    assert done.returncode == 0, done.stderr
