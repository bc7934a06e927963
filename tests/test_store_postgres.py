"""PostgresStore: the store contract unchanged, on a real throwaway PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from state.contract import StoreContract
from state.store import StateStore
from tests.pg import PgServer


class TestPostgresStore(StoreContract):
    @pytest.fixture(params=[8, 3], ids=["k8", "k3"])
    def store(self, request: pytest.FixtureRequest, pg_server: PgServer) -> Iterator[StateStore]:
        from state.postgres import PostgresStore

        self.views: list[Any] = []
        self.url = pg_server.new_schema()
        with PostgresStore(self.url, snapshot_every=request.param) as store:
            yield store
        for view in self.views:
            view.close()

    def reopened(self, store: StateStore) -> StateStore:
        from state.postgres import PostgresStore

        assert isinstance(store, PostgresStore)
        view = PostgresStore(self.url, snapshot_every=store.snapshot_every)
        self.views.append(view)
        return view
