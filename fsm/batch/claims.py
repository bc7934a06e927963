"""The batch input: one ``{"id", "claim"}`` object per line, checked before anything runs.

Each claim gets a session id derived from its id and text, so running the same file
again finds the sessions it started (a DONE one is skipped, a half-done one resumes).

The file is streamed, never held: :func:`read_claims` checks every line in one pass
(bounded: :data:`MAX_CLAIMS_LINE_BYTES` per line, :data:`MAX_CLAIMS` lines,
:data:`MAX_CLAIMS_FILE_BYTES` in all) and returns a :class:`ClaimsFile`, which reads the
claims again from the file each time it is iterated. The ids seen so far live in a
:class:`~claimfsm.skills.tools.bounded.SeenKeys` (flat memory for any count).
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Protocol

import orjson
from pydantic import BaseModel, ConfigDict

from claimfsm.engine.errors import ClaimFsmError, ErrorCode, check_claim
from claimfsm.skills.tools.bounded import Bounds, OverLimit, SeenKeys, read_lines

__all__ = [
    "MAX_CLAIMS",
    "MAX_CLAIMS_FILE_BYTES",
    "MAX_CLAIMS_LINE_BYTES",
    "BatchClaim",
    "BatchInputError",
    "Claims",
    "ClaimsFile",
    "read_claims",
    "session_id",
]

_SHOWN = 5  # problems named in the error message; the rest are counted

MAX_CLAIMS_LINE_BYTES = 64 * 1024
"""One line of a claims file, its line end included: a claim of the largest size
(``MAX_CLAIM_CHARS``), every character escaped, and a long id."""

MAX_CLAIMS = 10_000_000
"""Lines of one claims file (blank ones too): days of work for one machine."""

MAX_CLAIMS_FILE_BYTES = 4 * 1024**3
"""Bytes of one claims file."""

_BOUNDS = Bounds(line=MAX_CLAIMS_LINE_BYTES, lines=MAX_CLAIMS, size=MAX_CLAIMS_FILE_BYTES)


class BatchInputError(ClaimFsmError):
    """The claims file cannot be read or has bad lines (each named by line number)."""

    code = ErrorCode.BAD_CLAIMS


class BatchClaim(BaseModel):
    """One line of the input: the caller's ``id`` (kept as given) and the claim text."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    id: str | int
    claim: str

    @property
    def sid(self) -> str:
        """The session id of this claim (see :func:`session_id`)."""
        return session_id(self.id, self.claim)


class Claims(Protocol):
    """What a batch runs: claims it can count and walk (a list, a :class:`ClaimsFile`)."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[BatchClaim]: ...


def session_id(claim_id: str | int, claim: str) -> str:
    """``b`` + 20 hex digits of sha256 over the id and the text: the same line always
    maps to the same session, and an id reused for another text gets a new one.
    """
    digest = hashlib.sha256(orjson.dumps([claim_id, claim])).hexdigest()
    return f"b{digest[:20]}"


def _problem(line: int, value: object) -> str | None:
    if not isinstance(value, dict):
        return f"line {line}: not a JSON object"
    missing = [f for f in ("id", "claim") if f not in value]
    if missing:
        return f"line {line}: field {missing[0]!r} is missing"
    extra = sorted(set(value) - {"id", "claim"})
    if extra:
        return f"line {line}: unknown field {extra[0]!r} (fields: id, claim)"
    cid = value["id"]
    if isinstance(cid, bool) or not isinstance(cid, str | int) or cid == "":
        return f"line {line}: field 'id' must be a non-empty string or an integer"
    if not isinstance(value["claim"], str) or not value["claim"].strip():
        return f"line {line}: field 'claim' must be a non-empty string"
    try:
        check_claim(value["claim"])  # what the driver would refuse, refused up front
    except ClaimFsmError as exc:
        return f"line {line}: {exc.code}: {exc.msg}"
    return None


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class ClaimsFile:
    """The claims of a checked file: ``len()`` of them, read again (streamed) from the
    file by each iteration. A file changed since it was checked is refused
    (:class:`BatchInputError`) rather than run half old, half new. A pipe or device was
    copied to a temporary file while it was checked (it cannot be read twice)."""

    def __init__(self, path: Path, count: int, *, stamp: tuple[int, int, int, int] | None,
                 copy: IO[bytes] | None = None) -> None:
        self.path = path
        self._count = count
        self._stamp = stamp
        self._copy = copy

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[BatchClaim]:
        changed = BatchInputError(f"{self.path}: changed since it was checked; run the "
                                  "command again", field="CLAIMS")
        if self._copy is not None:
            self._copy.seek(0)
            yield from self._claims(self._copy, changed)
            return
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - closed by the with below
        except OSError as exc:
            raise BatchInputError(f"{self.path}: {exc.strerror or exc}",
                                  field="CLAIMS") from exc
        with handle:
            if _stamp(os.fstat(handle.fileno())) != self._stamp:
                raise changed
            yield from self._claims(handle, changed)

    def _claims(self, handle: IO[bytes], changed: BatchInputError) -> Iterator[BatchClaim]:
        count = 0
        try:
            for _, _, raw in read_lines(handle, _BOUNDS):
                if raw.strip():
                    value = orjson.loads(raw)
                    count += 1
                    yield BatchClaim(id=value["id"], claim=value["claim"])
        except (OverLimit, ValueError, KeyError, TypeError) as exc:
            raise changed from exc
        if count != self._count:
            raise changed

    def close(self) -> None:
        """Drop the temporary copy of a pipe's claims, if any."""
        if self._copy is not None:
            self._copy.close()
            self._copy = None


def read_claims(path: Path) -> ClaimsFile:
    """Check every claim of ``path`` and return them as a :class:`ClaimsFile`;
    :class:`BatchInputError` naming the bad lines (bad JSON, a missing or mistyped field,
    a claim over the size limit, an id used twice, a line, line count or file over its
    bound) or an empty file.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
        st = os.fstat(handle.fileno())
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise BatchInputError(f"{path}: {getattr(exc, 'strerror', None) or exc}",
                              field="CLAIMS") from exc
    regular = stat.S_ISREG(st.st_mode)
    copy = None if regular else tempfile.TemporaryFile()  # noqa: SIM115 - kept by ClaimsFile
    count = 0
    problems: list[str] = []
    bad = 0
    try:
        with handle, SeenKeys() as seen:
            if regular and st.st_size > MAX_CLAIMS_FILE_BYTES:
                raise OverLimit(f"more than {MAX_CLAIMS_FILE_BYTES} bytes", line=0)
            for number, _, raw in read_lines(handle, _BOUNDS):
                if not raw.strip():
                    continue
                try:
                    value = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    problem: str | None = f"line {number}: not valid JSON"
                else:
                    problem = _problem(number, value)
                if problem is None:
                    earlier = seen.first(orjson.dumps(value["id"]).decode(), number)
                    if earlier is not None:
                        problem = f"line {number}: id {value['id']!r} already used on " \
                                  f"line {earlier}"
                if problem is not None:
                    bad += 1
                    if len(problems) < _SHOWN:
                        problems.append(problem)
                    continue
                count += 1
                if copy is not None:
                    copy.write(raw if raw.endswith(b"\n") else raw + b"\n")
    except OverLimit as exc:
        _drop(copy)
        raise BatchInputError(f"{path}: {exc.msg} (INPUT_TOO_LARGE: the limits are in "
                              "docs/limits.md)", field="CLAIMS") from None
    except OSError as exc:
        _drop(copy)
        raise BatchInputError(f"{path}: {exc.strerror or exc}", field="CLAIMS") from exc
    if problems:
        _drop(copy)
        more = f" (and {bad - _SHOWN} more)" if bad > _SHOWN else ""
        raise BatchInputError(f"{path}: " + "; ".join(problems) + more, field="CLAIMS")
    if not count:
        _drop(copy)
        raise BatchInputError(f"{path}: no claims (one {{\"id\", \"claim\"}} object per line)",
                              field="CLAIMS")
    return ClaimsFile(path, count, stamp=_stamp(st) if regular else None, copy=copy)


def _drop(copy: IO[bytes] | None) -> None:
    if copy is not None:
        copy.close()
