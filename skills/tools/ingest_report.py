"""What a load into the evidence index reports, and the running tally behind it.

A load reads its input once, writing batches as it goes; the tally keeps the counts of
every refused line or file by code but lists only the first :data:`MAX_LISTED_ERRORS`,
so a file of ten million bad lines costs the memory of a thousand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BATCH_BYTES",
    "MAX_LISTED_ERRORS",
    "IngestError",
    "IngestReport",
    "ProgressCallback",
    "Tally",
]

ProgressCallback = Callable[[int, int], None]
"""Called with ``(done, total)`` after each batch and at the end (bytes for a file,
files for a folder)."""

MAX_LISTED_ERRORS = 1_000
"""Refused lines or files a report lists one by one; the rest are only counted."""

BATCH_BYTES = 8 * 1024 * 1024
"""Text a load holds before it writes a batch, whatever the batch's count: what keeps a
load of large documents flat in memory (about this much plus one document)."""


class IngestError(BaseModel):
    """One refused line or file. ``line`` is 1-based (0: the file or folder itself, or a
    file of a folder, named by ``field``).

    Codes: ``BAD_JSON``, ``NOT_OBJECT``, ``MISSING_FIELD``, ``WRONG_TYPE``,
    ``EMPTY_FIELD``, ``BAD_SOURCE``, ``NOT_UTF8``, ``DUPLICATE_ID``, ``OUTSIDE_FOLDER``,
    ``UNREADABLE``, ``INDEX_ERROR``, ``INPUT_TOO_LARGE``.
    """

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    line: int
    msg: str
    code: str = "BAD_LINE"
    field: str | None = None


class IngestReport(BaseModel):
    """The outcome of a load: ``lines`` non-blank lines (or document files) read, each
    either added (new or changed), unchanged (stored as it is already) or skipped
    (``added + unchanged + skipped == lines``). ``codes`` counts the skipped ones by code;
    ``errors`` lists the first :data:`MAX_LISTED_ERRORS` problems, and also those of the
    file or folder as a whole (``line`` 0: an unreadable file, a database failure, a
    folder too deep), which are not lines."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    added: int
    errors: list[IngestError]
    lines: int
    unchanged: int = 0
    skipped: int = 0
    codes: dict[str, int] = Field(default_factory=dict)


class Tally:
    """Counts of a load in progress; :meth:`report` freezes them."""

    def __init__(self) -> None:
        self.added = self.unchanged = self.lines = self.skipped = 0
        self.listed: list[IngestError] = []
        self.codes: Counter[str] = Counter()

    def refuse(self, error: IngestError, *, counted: bool = True) -> None:
        """Record ``error``; ``counted``: it refuses a line or file (else it is about the
        input as a whole and only listed)."""
        if counted:
            self.skipped += 1
            self.codes[error.code] += 1
        if len(self.listed) < MAX_LISTED_ERRORS or not counted:
            self.listed.append(error)

    def wrote(self, counts: tuple[int, int]) -> None:
        """Add a batch's ``(written, unchanged)``."""
        self.added += counts[0]
        self.unchanged += counts[1]

    def report(self) -> IngestReport:
        """The :class:`IngestReport` of what was tallied."""
        return IngestReport(added=self.added, errors=list(self.listed), lines=self.lines,
                            unchanged=self.unchanged, skipped=self.skipped,
                            codes=dict(sorted(self.codes.items())))
