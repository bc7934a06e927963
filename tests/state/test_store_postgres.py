"""PostgresStore: the store contract unchanged, on a real throwaway PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from claimfsm.state.contract import StoreContract
from claimfsm.state.store import StateStore
from tests.support.pg import PgServer


class TestPostgresStore(StoreContract):
    @pytest.fixture(params=[8, 3], ids=["k8", "k3"])
    def store(self, request: pytest.FixtureRequest, pg_server: PgServer) -> Iterator[StateStore]:
        from claimfsm.state.postgres import PostgresStore

        self.views: list[Any] = []
        self.url = pg_server.new_schema()
        with PostgresStore(self.url, snapshot_every=request.param) as store:
            yield store
        for view in self.views:
            view.close()

    def reopened(self, store: StateStore) -> StateStore:
        from claimfsm.state.postgres import PostgresStore

        assert isinstance(store, PostgresStore)
        view = PostgresStore(self.url, snapshot_every=store.snapshot_every)
        self.views.append(view)
        return view


def test_a_version_1_database_with_named_snapshots_is_read_and_upgraded(
        pg_server: PgServer) -> None:
    """Version 1 wrote snapshots as objects keyed by field name: read as they are, and the
    first writable open only marks the database version 2 (an older claimfsm refuses it)."""
    import orjson
    import psycopg

    from claimfsm.state.codec import STATE_FIELDS, pack_row, unpack_row
    from claimfsm.state.contract import make_revision, rich_state
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    revisions = [make_revision("s", 0, rich_state("s"))]
    for rev in range(1, 6):
        state = revisions[-1].state.model_copy(update={"rounds": rev})
        revisions.append(make_revision("s", rev, state))
    with PostgresStore(url, snapshot_every=3) as store:
        store.create(revisions[0])
        for rev in range(1, 6):
            store.commit(revisions[rev], expected_rev=rev - 1)
    with psycopg.connect(url, autocommit=True) as conn:
        for session, rev, body in conn.execute(
                "SELECT session, rev, body FROM st_revisions WHERE kind = 0").fetchall():
            values = orjson.loads(unpack_row(bytes(body)))
            named = orjson.dumps(dict(zip(STATE_FIELDS, values, strict=True)))
            conn.execute("UPDATE st_revisions SET body = %s WHERE session = %s AND rev = %s",
                         (pack_row(named), session, rev))
        conn.execute("UPDATE st_meta SET value = '1' WHERE key = 'schema'")
    with PostgresStore(url) as store:
        assert list(store.history("s")) == revisions
        assert store.verify_chain("s").ok
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM st_meta WHERE key = 'schema'").fetchone() == ("2",)


def test_a_failed_batch_leaves_nothing_and_forgets_what_it_cached(pg_server: PgServer) -> None:
    from claimfsm.state.contract import make_revision, make_state
    from claimfsm.state.postgres import PostgresStore

    url = pg_server.new_schema()
    with PostgresStore(url) as store:
        store.create(make_revision("s", 0, make_state("s")))
        with pytest.raises(RuntimeError), store.batch():
            store.commit(make_revision("s", 1, make_state("s", rounds=1)), expected_rev=0)
            raise RuntimeError("the tick stopped")
        assert store.head("s").rev == 0 and len(store.history("s")) == 1
        store.commit(make_revision("s", 1, make_state("s", rounds=2)), expected_rev=0)
        assert store.head("s").state.rounds == 2 and store.verify_chain("s").ok
