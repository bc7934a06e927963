"""An optional response cache for ``model.chat``: request digest -> the server's answer.

For development loops: the same request (same messages, schema, model and parameters)
is answered from a folder instead of the server, with no tokens counted. Give it to the
engine as the ``model_cache`` resource::

    EngineConfig(resources={"model_cache": ResponseCache(".cache/model")})

A cached answer is recorded like any other (its ``cached`` flag set), so a session run
from the cache replays exactly like one that asked the server.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

__all__ = ["ResponseCache"]

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class ResponseCache:
    """Answers kept as files named by their request's digest."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def _path(self, digest: str) -> Path | None:
        if not _DIGEST.match(digest):
            return None
        return self.folder / (digest.removeprefix("sha256:") + ".json")

    def get(self, digest: str) -> bytes | None:
        """The cached answer body, or ``None``."""
        path = self._path(digest)
        try:
            return None if path is None else path.read_bytes()
        except OSError:
            return None

    def put(self, digest: str, body: bytes) -> None:
        """Keep ``body`` for ``digest`` (written whole, then renamed: never half a file)."""
        path = self._path(digest)
        if path is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.replace(tmp, path)
        except OSError:
            return  # a cache that cannot be written is only a slower loop
