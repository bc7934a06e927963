"""The async store contract (state/contract_async.py) on memory, SQLite (a dedicated
store thread) and PostgreSQL (psycopg's async connection, on the throwaway server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from claimfsm.state.aio import AsyncStore, ThreadedStore, async_store
from claimfsm.state.contract_async import AsyncStoreContract
from tests.support.pg import PgServer


class TestMemoryAsync(AsyncStoreContract):
    async def fresh(self) -> AsyncStore:
        from claimfsm.state.memory import MemoryStore

        return await async_store(MemoryStore())


class TestSQLiteAsync(AsyncStoreContract):
    @pytest.fixture(autouse=True, params=["normal", "group"])
    def _where(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.path = tmp_path / "s.db"
        self.durability = request.param

    async def fresh(self) -> AsyncStore:
        from claimfsm.state.sqlite import SQLiteStore

        store = await async_store(SQLiteStore(self.path, durability=self.durability))
        assert isinstance(store, ThreadedStore)
        return store

    async def reopen(self, store: AsyncStore) -> AsyncStore:
        from claimfsm.state.sqlite import SQLiteStore

        return await async_store(SQLiteStore(self.path))


class TestPostgresAsync(AsyncStoreContract):
    @pytest.fixture(autouse=True, params=[8, 3], ids=["k8", "k3"])
    def _where(self, request: pytest.FixtureRequest, pg_server: PgServer) -> None:
        self.url = pg_server.new_schema()
        self.every = request.param

    async def fresh(self) -> AsyncStore:
        from claimfsm.state.postgres.aio import AsyncPostgresStore

        return await AsyncPostgresStore.open(self.url, snapshot_every=self.every)

    async def reopen(self, store: AsyncStore) -> AsyncStore:
        from claimfsm.state.postgres.aio import AsyncPostgresStore

        return await AsyncPostgresStore.open(self.url, snapshot_every=self.every)


def test_a_postgres_url_gets_the_async_connection_store(pg_server: PgServer) -> None:
    import asyncio

    from claimfsm.state.postgres import PostgresStore
    from claimfsm.state.postgres.aio import AsyncPostgresStore

    url = pg_server.new_schema()

    async def go() -> None:
        store = await async_store(PostgresStore(url))
        try:
            assert isinstance(store, AsyncPostgresStore)
        finally:
            await store.aclose()

    asyncio.run(go())
