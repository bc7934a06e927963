"""The API-key part of the store contract suite (:mod:`claimfsm.state.contract` mixes it
in, so every backend passes it): a key is stored as its digest only, read back equal,
listed oldest first; a name is never taken twice, revoked or not; revoking keeps the row
and refuses a key that is not live; a second instance of the store sees the same keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from claimfsm.state.keys import ApiKey, KeyExists, UnknownKey, new_key, split_key, stamp
from claimfsm.state.store import StateStore

__all__ = ["KeyContract"]

_NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


class KeyContract:
    """Mixed into :class:`claimfsm.state.contract.StoreContract`."""

    def reopened(self, store: StateStore) -> StateStore:
        return store

    def test_a_key_is_kept_as_its_digest(self, store: StateStore) -> None:
        assert store.api_keys() == []
        text, row = new_key("ops", "write", now=_NOW, expires=timedelta(days=30))
        assert store.add_key(row) == row
        found = list(self.reopened(store).api_keys())
        assert found == [row] and found[0].expires_at == "2026-12-25T12:00:00Z"
        parts = split_key(text)
        assert parts is not None and parts[0] == row.key_id
        assert found[0].matches(parts[1]) and not found[0].matches(parts[1] + "x")
        assert parts[1] not in found[0].model_dump_json()

    def test_names_are_never_reused(self, store: StateStore) -> None:
        store.add_key(new_key("a", "read", now=_NOW)[1])
        store.add_key(new_key("b", "admin", now=_NOW)[1])
        with pytest.raises(KeyExists) as taken:
            store.add_key(new_key("a", "admin", now=_NOW)[1])
        assert taken.value.code == "KEY_EXISTS" and taken.value.field == "name"
        store.revoke_key("a", at=stamp(_NOW))
        with pytest.raises(KeyExists):
            store.add_key(new_key("a", "read", now=_NOW)[1])
        assert [(k.name, k.role) for k in store.api_keys()] == [("a", "read"), ("b", "admin")]

    def test_revoking_keeps_the_row_and_ends_the_key(self, store: StateStore) -> None:
        store.add_key(new_key("a", "review", now=_NOW)[1])
        revoked = store.revoke_key("a", at="2026-11-26T00:00:00Z")
        assert revoked.revoked_at == "2026-11-26T00:00:00Z"
        assert not revoked.live(stamp(_NOW))
        assert list(self.reopened(store).api_keys()) == [revoked]
        for name in ("a", "nobody"):
            with pytest.raises(UnknownKey) as unknown:
                store.revoke_key(name, at=stamp(_NOW))
            assert unknown.value.code == "UNKNOWN_KEY" and unknown.value.field == "name"

    def test_who_added_and_revoked_a_key_is_kept(self, store: StateStore) -> None:
        store.add_key(new_key("a", "read", now=_NOW, actor="ops")[1])
        store.add_key(new_key("b", "read", now=_NOW)[1])
        revoked = store.revoke_key("a", at=stamp(_NOW), actor="lee")
        assert (revoked.created_by, revoked.revoked_by) == ("ops", "lee")
        assert [(k.name, k.created_by, k.revoked_by)
                for k in self.reopened(store).api_keys()] == [("a", "ops", "lee"),
                                                             ("b", None, None)]

    def test_expiry_is_a_time(self, store: StateStore) -> None:
        row = store.add_key(new_key("t", "read", now=_NOW, expires=timedelta(hours=12))[1])
        assert isinstance(row, ApiKey)
        assert row.live("2026-11-25T23:59:59Z") and not row.live("2026-11-26T00:00:00Z")
