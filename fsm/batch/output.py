"""The ``--out`` file of a batch: appended to, never truncated, one line per claim id.

A run after a killed one must not lose the first run's lines: the file is opened for
appending, and a result that says what the file already says for its claim (a DONE claim
skipped on the re-run) is not written again. A result that says something new (a claim
that failed and now resumed) is appended, and once the run has ended the file is
rewritten, keeping only the last line of each id (into a temporary file beside it, then
renamed over it: a kill during the rewrite leaves the old file whole). An interrupted run
leaves the duplicates for the next run to fold.

A file that holds anything but batch result lines is refused before the run (it is
someone else's file); a last line cut short by a kill mid-write is cut off.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any

import orjson

from claimfsm.batch.claims import MAX_CLAIMS_LINE_BYTES
from claimfsm.engine.errors import ClaimFsmError, ErrorCode
from claimfsm.skills.tools.bounded import Bounds, OverLimit, SeenKeys, read_lines

__all__ = ["OutWriteError", "ResultFile"]

# A result line holds the claim's id, its session id, the verdict and an error message
# of at most a few hundred characters.
_BOUNDS = Bounds(line=MAX_CLAIMS_LINE_BYTES + 8 * 1024)
_FIELDS = frozenset({"id", "sid", "status"})


class OutWriteError(ClaimFsmError):
    """The ``--out`` file cannot be read, written or rewritten, or is not a batch's."""

    code = ErrorCode.OUT_WRITE_FAILED


def _key(value: Any) -> str:
    return orjson.dumps(value).decode()


def _outcome(line: dict[str, Any]) -> str:
    return _key([line.get("id"), line.get("sid"), line.get("fsm"), line.get("rev")])


class ResultFile:
    """``--out``: :meth:`write` each result line as it finishes, :meth:`close` at the end
    (``complete``: the run ended, so the file may be folded to one line per id)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ids = SeenKeys()
        self._said = SeenKeys()
        self._fold = False
        try:
            self._scan()
            self._sink: IO[bytes] = open(path, "ab")  # noqa: SIM115 - closed by close()
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
            self._forget()
            raise OutWriteError(f"--out {path}: {getattr(exc, 'strerror', None) or exc}",
                                field="out") from exc
        except OutWriteError:
            self._forget()
            raise

    def _scan(self) -> None:
        """Learn what the file holds; cut off a torn last line."""
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - closed by the with below
        except FileNotFoundError:
            return
        torn: int | None = None
        with handle:
            start = 0
            try:
                for number, pos, raw in read_lines(handle, _BOUNDS):
                    if not raw.strip():
                        start = pos
                        continue
                    value = _parse(raw)
                    if value is None:
                        if not raw.endswith(b"\n"):
                            torn = start  # a line a killed run was writing
                            break
                        raise OutWriteError(
                            f"--out {self.path}: line {number} is not a batch result line; "
                            "not appending to another program's file", field="out")
                    start = pos
                    key = _key(value["id"])
                    if self._ids.get(key) is not None:
                        self._fold = True  # an interrupted run left two lines for an id
                    self._ids.put(key, number)
                    self._said.put(_outcome(value), number)
            except OverLimit as exc:
                raise OutWriteError(f"--out {self.path}: {exc.msg}: not a batch result file",
                                    field="out") from None
        if torn is not None:
            with open(self.path, "r+b") as cut:
                cut.truncate(torn)

    def write(self, line: dict[str, Any]) -> None:
        """Append ``line`` unless the file says the same already."""
        if _outcome(line) in self._said:
            return
        if _key(line["id"]) in self._ids:
            self._fold = True
        try:
            self._sink.write(orjson.dumps(line) + b"\n")
            self._sink.flush()
        except OSError as exc:
            raise OutWriteError(f"--out {self.path}: {exc.strerror or exc} (the sessions are "
                                "stored: run the same command again)", field="out") from exc

    def close(self, *, complete: bool) -> None:
        """Close the file; with ``complete``, fold it to the last line of each id."""
        try:
            self._sink.close()
            if complete and self._fold:
                self._rewrite()
        except OSError as exc:
            raise OutWriteError(f"--out {self.path}: {exc.strerror or exc}",
                                field="out") from exc
        finally:
            self._forget()

    def _forget(self) -> None:
        self._ids.close()
        self._said.close()

    def _rewrite(self) -> None:
        with SeenKeys() as last:
            with open(self.path, "rb") as handle:
                for number, _, raw in read_lines(handle, _BOUNDS):
                    value = _parse(raw)
                    if value is not None:
                        last.put(_key(value["id"]), number)
            fd, name = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            try:
                with os.fdopen(fd, "wb") as folded, open(self.path, "rb") as handle:
                    for number, _, raw in read_lines(handle, _BOUNDS):
                        value = _parse(raw)
                        if value is not None and last.get(_key(value["id"])) == number:
                            folded.write(raw if raw.endswith(b"\n") else raw + b"\n")
                    folded.flush()
                    os.fsync(folded.fileno())
                shutil.copymode(self.path, name)
                os.replace(name, self.path)
            except BaseException:
                Path(name).unlink(missing_ok=True)
                raise


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not value.keys() >= _FIELDS:
        return None
    return value
