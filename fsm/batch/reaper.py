"""Stopping the local Ray a batch started when the batch's process dies without stopping
it (SIGKILL, the OOM killer).

Ray ties its head processes to the process that started them, but the agents its raylet
starts outlive a killed driver by about a minute. So a batch that starts a local Ray also
starts this small watcher (Linux only: it reads ``/proc``): the driver sends it the pids
of the processes Ray started, and holds a pipe to it. A driver that finishes says
``done``; a pipe that closes without it means the driver died, and the watcher kills the
processes it was told about and their children (each checked by its start time, so a
reused pid is never hit).

Run as a script (``python -I reaper.py``), it imports nothing of claimfsm.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO

__all__ = ["Reaper", "children", "descendants", "main"]

_PROC = Path("/proc")


def _stat(pid: int) -> tuple[int, int] | None:
    """``(parent pid, start time)`` of ``pid``, or None when it is gone."""
    try:
        raw = (_PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = raw[raw.rfind(b")") + 2:].split()
    return int(fields[1]), int(fields[19])


def _table() -> dict[int, int]:
    """Every process's parent."""
    parents: dict[int, int] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            found = _stat(int(entry.name))
            if found is not None:
                parents[int(entry.name)] = found[0]
    return parents


def children(pid: int) -> set[int]:
    """The direct children of ``pid``."""
    return {child for child, parent in _table().items() if parent == pid}


def descendants(roots: Iterable[int]) -> set[int]:
    """``roots`` and every process below them."""
    parents = _table()
    found = set(roots)
    grew = True
    while grew:
        more = {child for child, parent in parents.items()
                if parent in found and child not in found}
        found |= more
        grew = bool(more)
    return found


class Reaper:
    """The watcher of one batch's local Ray (see the module): :meth:`watch` the processes
    Ray started, :meth:`release` once Ray is shut down. A no-op where there is no
    ``/proc`` or the watcher cannot start."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        if not (_PROC / "self" / "stat").exists():
            return
        try:
            # Its own session: a Ctrl-C or a kill of the terminal's process group must
            # not take the watcher with the driver.
            self._proc = subprocess.Popen(
                [sys.executable, "-I", __file__], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                start_new_session=True)
        except OSError:
            self._proc = None

    @property
    def pid(self) -> int | None:
        """The watcher's pid (None: not running)."""
        return None if self._proc is None else self._proc.pid

    def watch(self, pids: Iterable[int]) -> None:
        """Tell the watcher to kill ``pids`` (and their children then) if this process dies."""
        if self._proc is None:
            return
        lines = []
        for pid in sorted(set(pids) - {self._proc.pid, os.getpid()}):
            found = _stat(pid)
            if found is not None:
                lines.append(f"{pid} {found[1]}\n")
        self._send("".join(lines))

    def release(self) -> None:
        """Ray is stopped: the watcher exits without killing anything."""
        if self._proc is None:
            return
        self._send("done\n")
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc = None

    def _send(self, text: str) -> None:
        assert self._proc is not None
        stdin: IO[bytes] | None = self._proc.stdin
        try:
            if stdin is not None:
                stdin.write(text.encode())
                stdin.flush()
        except OSError:
            pass  # the watcher is gone: nothing more it can do


def _reap(watched: dict[int, int]) -> None:
    alive = [pid for pid, start in watched.items()
             if (found := _stat(pid)) is not None and found[1] == start]
    # Children first found now (a worker started late) die too; then the watched ones.
    for pid in sorted(descendants(alive) - set(alive)) + alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def main() -> None:
    """The watcher: read ``pid start`` lines until ``done`` (exit) or the end of input
    (the driver died: kill them)."""
    watched: dict[int, int] = {}
    for line in sys.stdin.buffer:
        text = line.decode(errors="replace").strip()
        if text == "done":
            return
        pid, _, start = text.partition(" ")
        if pid.isdigit() and start.isdigit():
            watched[int(pid)] = int(start)
    _reap(watched)


if __name__ == "__main__":
    main()
