"""A disk quota reached (``EDQUOT``) is ``STORE_FULL``, as a full disk is.

SQLite turns ``ENOSPC`` into ``SQLITE_FULL`` but any other failed write, ``EDQUOT``
included, into a plain "disk I/O error" (``SQLITE_IOERR_WRITE``), and ``statvfs`` sees the
disk's free space, not the user's quota. So after a write error with room on the disk,
claimfsm asks the quota itself: a few blocks for an unnamed temporary file beside the
store (``claimfsm._base.sqlite.quota_reached``).

This machine's kernel has no quota support (and CI's may not), so the quota is simulated
where the operating system answers, at ``os.open``/``os.write``; SQLite's own failed
write is real: a child process whose file size limit (``RLIMIT_FSIZE``) stops the store's
WAL from growing gets ``SQLITE_IOERR_WRITE``, the error a quota gives.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claimfsm._base import sqlite as mapping


def _refuse(number: int) -> object:
    def refuse(*args: object, **kwargs: object) -> object:
        raise OSError(number, os.strerror(number))
    return refuse


def test_the_probe_writes_nothing_anyone_can_see(tmp_path: Path) -> None:
    (tmp_path / "s.db").write_bytes(b"x")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert mapping.quota_reached(tmp_path / "s.db") is False
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("where,number,reached", [
    ("write", errno.EDQUOT, True),    # no block left within the quota
    ("open", errno.EDQUOT, True),     # no inode left within the quota
    ("write", errno.EIO, False),      # a failing disk is not a quota
    ("open", errno.EOPNOTSUPP, False),  # a file system without O_TMPFILE: cannot tell
])
def test_the_probe_reports_only_a_quota(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        where: str, number: int, reached: bool) -> None:
    monkeypatch.setattr(mapping.os, where, _refuse(number))
    assert mapping.quota_reached(tmp_path / "s.db") is reached


def _ioerr(code: int) -> Exception:
    import sqlite3

    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorcode = code  # type: ignore[attr-defined]  # as SQLite's own errors carry
    return exc


def test_a_write_error_within_a_reached_quota_is_store_full(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(mapping, "disk_state", lambda path: None)  # room on the disk
    monkeypatch.setattr(mapping.os, "write", _refuse(errno.EDQUOT))
    for extended in (778, 1034, 1290, 1546, 4874):  # WRITE, FSYNC, DIR_FSYNC, TRUNCATE, SHMSIZE
        code, msg = mapping.sqlite_failure(_ioerr(extended), tmp_path / "s.db")  # type: ignore[arg-type]
        assert code == "STORE_FULL", extended
        assert msg == (f"--db: {tmp_path / 's.db'}: the disk quota is reached (disk I/O "
                       "error); nothing was written past the last commit: free space or "
                       "raise the quota and run the command again")


def test_a_read_error_never_probes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Readers never write: an I/O error while reading (IOERR_READ, IOERR_SHORT_READ) is no
    # quota's doing, and asking would create a file.
    monkeypatch.setattr(mapping, "disk_state", lambda path: None)
    asked: list[object] = []
    monkeypatch.setattr(mapping, "quota_reached", lambda path: asked.append(path) or True)
    for extended in (266, 522, 10):
        code, _ = mapping.sqlite_failure(_ioerr(extended), tmp_path / "s.db")  # type: ignore[arg-type]
        assert code == "STORE_IO"
    assert asked == []


# The child: a store whose WAL cannot grow past the file size limit; SIGXFSZ ignored, so
# the write fails with EFBIG, which SQLite reports as it reports EDQUOT. QUOTA=1 makes the
# operating system's answer to the probe EDQUOT, as a reached quota's.
_CHILD = """
import errno, os, resource, signal, sys
from claimfsm._base import sqlite as mapping
from claimfsm.state.contract import make_revision, make_state
from claimfsm.state.errors import StoreError
from claimfsm.state.sqlite.store import SQLiteStore

db = sys.argv[1]
with SQLiteStore(db) as store:
    state = make_state("quota")
    store.create(make_revision("quota", 0, state))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = os.path.getsize(db) + 256 * 1024
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
if os.environ.get("QUOTA") == "1":
    def refuse(*args):
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
    mapping.os.write = refuse
rev = 0
try:
    with SQLiteStore(db) as store:
        while rev < 100_000:
            rev += 1
            state = state.model_copy(update={"memory": {"pad": os.urandom(2048).hex()}})
            store.commit(make_revision("quota", rev, state), expected_rev=rev - 1)
except StoreError as exc:
    print(exc.code, rev - 1, exc.msg, sep="\\n")
"""


@pytest.mark.parametrize("quota,code,says", [("0", "STORE_IO", "disk I/O error"),
                                             ("1", "STORE_FULL", "the disk quota is reached")])
def test_sqlite_s_own_write_error_reaches_the_quota_probe(tmp_path: Path, quota: str,
                                                           code: str, says: str) -> None:
    db = tmp_path / "q.db"
    done = subprocess.run([sys.executable, "-c", _CHILD, str(db)], capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "QUOTA": quota})
    assert done.returncode == 0, done.stderr[-2000:]
    found, last, msg = done.stdout.splitlines()[:3]
    assert (found, says in msg, str(db) in msg) == (code, True, True), done.stdout
    # Nothing past the last commit, and the store opens at it once the limit is gone.
    from claimfsm.state.sqlite.store import SQLiteStore

    with SQLiteStore(db) as store:
        assert store.head("quota").rev == int(last) > 0
