"""The plumbing of :class:`~claimfsm.state.postgres.store.PostgresStore`: one connection, the
retried queries, caches of decoded revisions and blobs, and reading rows back through
the same decoder as the SQLite backend."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from claimfsm._base.errors import BadInput
from claimfsm.state import codec
from claimfsm.state.codec import CodecError
from claimfsm.state.errors import NoStore, StoreError, UnknownRevision, UnknownSession
from claimfsm.state.postgres.db import ROWS, connect, init_schema, redact, retrying
from claimfsm.state.sqlite.decode import ChainDecoder, decode_rows
from claimfsm.state.sqlite.lru import Lru
from claimfsm.state.sqlite.rows import Encoded, Entry, Row, inflate

__all__ = ["MAX_REV", "SESSION", "PostgresCore", "inflated"]

T = TypeVar("T")

#: The largest revision number the schema holds (``integer``).
MAX_REV = 0x7FFFFFFF


#: A session's number and head by its id.
SESSION = "SELECT id, head FROM st_sessions WHERE sid = %s"


def inflated(rows: list[tuple[Any, ...]]) -> list[Row]:
    """``st_revisions`` rows as the server returns them, as the decoder reads them."""
    return inflate([(*r[:6], bytes(r[6]), bytes(r[7]), bytes(r[8])) for r in rows])


class PostgresCore:
    """Connection, caches and the read paths (see
    :class:`~claimfsm.state.postgres.store.PostgresStore`)."""

    def __init__(
        self, url: str, *, snapshot_every: int = 8, cache_size: int = 1024,
        connect_timeout: float = 10.0, create: bool = True,
    ) -> None:
        if snapshot_every < 1:
            raise BadInput("snapshot_every must be at least 1", field="snapshot_every")
        self.url = redact(url)
        self._dsn = url  # as given (password included): the async store connects with it
        self.snapshot_every = snapshot_every
        self._lock = threading.RLock()
        self._conn = connect(url, connect_timeout)
        try:
            if not retrying(lambda: init_schema(self._conn, create=create)):
                raise NoStore(f"--db: {self.url} holds no claimfsm sessions", field="db")
        except BaseException:
            self._conn.close()
            raise
        self._ids: dict[str, int] = {}
        self._entries: Lru[tuple[str, int], Entry] = Lru(cache_size)
        self._blobs: Lru[str, bytes] = Lru(max(64, cache_size // 4))
        self._known: Lru[str, bool] = Lru(65536)
        self._closed = False
        self._catalog_complete = False  # every session in st_catalog (checked once)

    # -- plumbing ---------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        def run() -> list[tuple[Any, ...]]:
            with self._lock:
                if self._closed:
                    raise StoreError("store is closed")
                return self._conn.execute(sql, params, binary=True).fetchall()

        return retrying(run)

    def _locked(self, fn: Callable[[], T]) -> T:
        def run() -> T:
            with self._lock:
                if self._closed:
                    raise StoreError("store is closed")
                return fn()

        return retrying(run)

    def _session(self, sid: str) -> tuple[int, int]:
        """``(session number, head)``; raises :class:`UnknownSession`."""
        return self._known_session(sid, self._query(SESSION, (sid,)))

    def _known_session(self, sid: str, rows: list[tuple[Any, ...]]) -> tuple[int, int]:
        """``(session number, head)`` from the session's ``SESSION`` row, remembered."""
        if not rows or rows[0][1] < 0:  # head -1: deleted (state/postgres/erase.py)
            raise UnknownSession(f"no session {sid!r}", sid=sid)
        session, head = rows[0]
        self._ids[sid] = session
        return session, head

    def _rows(self, session: int, first: int, last: int, sql: str = ROWS) -> list[Row]:
        params = (session, first, last) if sql is ROWS else (session, last, session, first)
        return inflated(self._query(sql, params))

    def _fetch(self, digest: str) -> bytes:
        raw = self._blobs.get(digest)
        if raw is not None:
            return raw
        rows = self._query("SELECT z, data FROM st_blobs WHERE h = %s", (bytes.fromhex(digest),))
        return self._blob_found(digest, rows)

    def _blob_found(self, digest: str, rows: list[tuple[Any, ...]]) -> bytes:
        """The blob ``digest`` from its ``st_blobs`` row (none: :class:`CodecError`),
        cached."""
        if not rows:
            raise CodecError(f"blob {digest[:12]} is missing")
        raw = codec.unpack_blob(rows[0][0], bytes(rows[0][1]))
        self._blobs.put(digest, raw)
        self._known.put(digest, True)
        return raw

    def _decode(self, sid: str, rows: list[Row], *, every: bool, first: int = 0) -> list[Entry]:
        return self._decode_with(sid, rows, self._fetch, every=every, first=first)

    def _decode_with(self, sid: str, rows: list[Row], fetch: Callable[[str], bytes], *,
                     every: bool, first: int = 0) -> list[Entry]:
        """``rows`` decoded with blobs from ``fetch``, each entry cached."""
        return decode_rows(sid, ChainDecoder(sid), rows, fetch,
                           lambda row, entry: self._entries.put((sid, row[0]), entry),
                           every=every, first=first)

    def _entry(self, sid: str, rev: int, session: int | None = None) -> Entry:
        cached = self._entries.get((sid, rev))
        if cached is not None:
            return cached
        if session is None:
            session = self._ids.get(sid) or self._session(sid)[0]
        first = self._first_row(sid, rev)
        rows = self._rows(session, first, rev)
        if first and (not rows or rows[0][2] != 0):
            rows = self._rows(session, 0, rev)  # written under another snapshot policy
        return self._decode(sid, self._from_snapshot(sid, rev, rows), every=False)[-1]

    def _first_row(self, sid: str, rev: int) -> int:
        """The revision whose row starts the read of ``rev`` (its snapshot's, under this
        store's policy); :class:`UnknownRevision` for a number no session has."""
        if not 0 <= rev <= MAX_REV:
            raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)
        return rev - rev % self.snapshot_every

    @staticmethod
    def _from_snapshot(sid: str, rev: int, rows: list[Row]) -> list[Row]:
        """``rows`` (read up to ``rev``) from the last snapshot on: what decodes ``rev``."""
        if not rows or rows[-1][0] != rev:
            raise UnknownRevision(f"session {sid!r} has no revision {rev}", sid=sid, rev=rev)
        snapshots = [i for i, row in enumerate(rows) if row[2] == 0]
        return rows[snapshots[-1] if snapshots else 0:]

    def _new_blobs(self, encoded: Encoded) -> tuple[list[bytes], list[int], list[bytes]]:
        fresh = sorted((bytes.fromhex(h), *codec.pack_blob(raw))
                       for h, raw in encoded.blobs.items() if h not in self._known)
        return [b[0] for b in fresh], [b[1] for b in fresh], [b[2] for b in fresh]

    def _remember(self, sid: str, encoded: Encoded) -> None:
        self._entries.put((sid, encoded.row[0]), encoded.entry)
        for digest in encoded.blobs:
            self._known.put(digest, True)

    # -- housekeeping -----------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Session, revision and blob counts."""
        (sessions, revisions, blobs), = self._query(
            "SELECT (SELECT count(*) FROM st_sessions), (SELECT count(*) FROM st_revisions),"
            " (SELECT count(*) FROM st_blobs)")
        return {"sessions": sessions, "revisions": revisions, "blobs": blobs}

    def clear_cache(self) -> None:
        """Forget decoded revisions and blobs (the next reads go to the server)."""
        self._entries.clear()
        self._blobs.clear()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
