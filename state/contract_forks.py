"""The forks index part of the store contract (:meth:`StateStore.forks
<claimfsm.state.store.StateStore.forks>`): a fork is listed under its parent once the
commit of its own ``Forked`` revision lands, oldest first, never before, and no longer
once deleted. Mixed into :class:`~claimfsm.state.contract.StoreContract`; needs pytest.
"""

from __future__ import annotations

from typing import Any

import pytest

from claimfsm._base.errors import BadInput
from claimfsm.state.errors import RevConflict, UnknownRevision, UnknownSession
from claimfsm.state.lineage import FORKED, LINEAGE_KEY
from claimfsm.state.model import Revision, SessionState
from claimfsm.state.store import StateStore

__all__ = ["ForksContract", "forked_revision", "same_but_sid"]


def forked_revision(copy: Revision, parent: str, ts: str) -> Revision:
    """The fork's own revision after ``copy`` (as the engine writes it)."""
    link = {"sid": parent, "rev": copy.rev, "at": ts}
    state = copy.state.model_copy(update={"runtime": {**copy.state.runtime, LINEAGE_KEY: link}})
    return copy.model_copy(update={
        "rev": copy.rev + 1, "parent_rev": copy.rev, "skill": None, "envelope": None,
        "state": state, "ts": ts,
        "events": [{"type": FORKED, "from": {"sid": parent, "rev": copy.rev}, "changes": []}]})


def same_but_sid(revisions: Any, sid: str) -> list[Any]:
    """``revisions`` as JSON with their sid (and their states') set to ``sid``."""
    out = []
    for revision in revisions:
        dumped = revision.model_dump(mode="json")
        dumped["sid"] = dumped["state"]["sid"] = sid
        out.append(dumped)
    return out


class ForksContract:
    """Behaviour of the forks index every backend must show."""

    def reopened(self, store: StateStore) -> StateStore:
        return store

    @staticmethod
    def _parent(store: StateStore, sid: str, n: int) -> None:
        state = SessionState(sid=sid, claim="Sea levels are rising.", fsm="PARSE_CLAIM")
        store.create(Revision(sid=sid, rev=0, parent_rev=None, fsm=state.fsm, skill=None,
                              envelope=None, state=state, ts="2026-01-01T00:00:00Z"))
        for rev in range(1, n + 1):
            state = state.model_copy(update={"rounds": rev})
            store.commit(Revision(sid=sid, rev=rev, parent_rev=rev - 1, fsm=state.fsm,
                                  skill="step", envelope=None, state=state,
                                  ts=f"2026-01-01T00:00:{rev:02d}Z"), expected_rev=rev - 1)

    @staticmethod
    def _forked(store: StateStore, parent: str, at: int, sid: str, ts: str) -> Revision:
        copy = store.fork(parent, at, sid)
        return store.commit(forked_revision(copy, parent, ts), expected_rev=copy.rev)

    def test_forks_are_listed_under_their_parent(self, store: StateStore) -> None:
        self._parent(store, "src", 4)
        self._parent(store, "other", 1)
        self._forked(store, "src", 1, "f1", "2026-02-01T00:00:00Z")
        self._forked(store, "src", 3, "f2", "2026-02-02T00:00:00Z")
        self._forked(store, "f1", 2, "g1", "2026-02-03T00:00:00Z")
        view = self.reopened(store)
        assert view.forks("src") == [
            {"sid": "f1", "rev": 1, "at": "2026-02-01T00:00:00Z"},
            {"sid": "f2", "rev": 3, "at": "2026-02-02T00:00:00Z"}]
        # A fork of a fork is listed under its own parent only, though its copied
        # history holds its grandparent's Forked revision too.
        assert view.forks("f1") == [{"sid": "g1", "rev": 2, "at": "2026-02-03T00:00:00Z"}]
        assert view.forks("other") == [] and view.forks("nobody") == []
        assert view.forks("src", limit=1) == [view.forks("src")[0]]

    def test_later_steps_keep_the_fork_listed(self, store: StateStore) -> None:
        self._parent(store, "src", 2)
        head = self._forked(store, "src", 2, "f1", "2026-02-01T00:00:00Z")
        state = head.state.model_copy(update={"rounds": 9})
        store.commit(head.model_copy(update={"rev": 4, "parent_rev": 3, "events": [],
                                             "state": state, "skill": "step"}), expected_rev=3)
        assert self.reopened(store).forks("src") == [
            {"sid": "f1", "rev": 2, "at": "2026-02-01T00:00:00Z"}]

    def test_a_bare_copy_is_not_a_fork_until_its_revision_lands(self, store: StateStore
                                                                  ) -> None:
        self._parent(store, "src", 2)
        store.fork("src", 1, "copy")
        assert store.forks("src") == []

    def test_a_fork_committed_in_a_batch_is_listed(self, store: StateStore) -> None:
        self._parent(store, "src", 2)
        copy = store.fork("src", 2, "f1")
        done = store.commit_all([(forked_revision(copy, "src", "2026-02-01T00:00:00Z"), 2)])
        assert isinstance(done[0], Revision)
        assert [f["sid"] for f in self.reopened(store).forks("src")] == ["f1"]

    def test_a_deleted_fork_is_not_listed(self, store: StateStore) -> None:
        self._parent(store, "src", 2)
        self._forked(store, "src", 1, "f1", "2026-02-01T00:00:00Z")
        self._forked(store, "src", 2, "f2", "2026-02-02T00:00:00Z")
        store.delete("f1", actor="test", at="2026-03-01T00:00:00Z")
        assert [f["sid"] for f in self.reopened(store).forks("src")] == ["f2"]

    # -- a fork and its own revision as one commit (StateStore.fork's ``then``) ------------

    def test_a_fork_with_its_own_revision_lands_whole(self, store: StateStore) -> None:
        self._parent(store, "src", 3)
        ts = "2026-02-01T00:00:00Z"
        seen: list[Revision] = []

        def own(copy: Revision) -> Revision:
            seen.append(copy)
            return forked_revision(copy, "src", ts)

        head = store.fork("src", 2, "f1", then=own)
        assert [c.rev for c in seen] == [2] and seen[0].sid == seen[0].state.sid == "f1"
        assert head == forked_revision(seen[0], "src", ts) and head.rev == 3
        view = self.reopened(store)
        assert view.head("f1") == head and view.get("f1", 3) == head
        assert [r.rev for r in view.history("f1")] == [0, 1, 2, 3]
        assert view.forks("src") == [{"sid": "f1", "rev": 2, "at": ts}]
        assert view.verify_chain("f1").ok and view.head("src").rev == 3

    def test_one_commit_stores_what_the_copy_and_a_commit_stored(self, store: StateStore
                                                                  ) -> None:
        self._parent(store, "src", 4)
        ts = "2026-02-01T00:00:00Z"
        two = self._forked(store, "src", 2, "two", ts)
        one = store.fork("src", 2, "one", then=lambda c: forked_revision(c, "src", ts))
        assert same_but_sid([one], "x") == same_but_sid([two], "x")
        view = self.reopened(store)
        assert same_but_sid(view.history("one"), "x") == same_but_sid(view.history("two"), "x")
        # Both chains verify: each row's stored hash is the one its content gives.
        assert view.verify_chain("one").ok and view.verify_chain("two").ok
        # And a step after either lands the same way.
        for sid in ("one", "two"):
            head = view.head(sid)
            state = head.state.model_copy(update={"rounds": 9})
            view.commit(head.model_copy(update={"rev": 4, "parent_rev": 3, "events": [],
                                                "state": state, "skill": "step"}),
                        expected_rev=3)
        again = self.reopened(store)
        assert same_but_sid(again.history("one"), "x") == same_but_sid(again.history("two"),
                                                                       "x")

    def test_a_fork_whose_own_revision_fails_leaves_nothing(self, store: StateStore
                                                            ) -> None:
        self._parent(store, "src", 2)

        def boom(copy: Revision) -> Revision:
            raise RuntimeError("then failed")  # the caller's code failing

        def wrong(copy: Revision) -> Revision:  # does not follow the copy's head
            return forked_revision(copy, "src", "2026-02-01T00:00:00Z").model_copy(
                update={"rev": copy.rev + 2})

        with pytest.raises(RuntimeError, match="then failed"):
            store.fork("src", 1, "f1", then=boom)
        def elsewhere(copy: Revision) -> Revision:  # another session's revision
            own = forked_revision(copy, "src", "2026-02-01T00:00:00Z")
            return own.model_copy(update={"sid": "other", "state": own.state.model_copy(
                update={"sid": "other"})})

        with pytest.raises(RevConflict):
            store.fork("src", 1, "f1", then=wrong)
        with pytest.raises(RevConflict, match="not of the session 'f1'"):
            store.fork("src", 1, "f1", then=elsewhere)
        view = self.reopened(store)
        for target in (store, view):
            with pytest.raises(UnknownSession):
                target.head("f1")
            assert "f1" not in target.sessions() and target.forks("src") == []
        # The name is still free: the same fork then lands whole.
        head = store.fork("src", 1, "f1",
                          then=lambda c: forked_revision(c, "src", "2026-02-01T00:00:00Z"))
        assert head.rev == 2 and self.reopened(store).forks("src")[0]["sid"] == "f1"

    def test_a_fork_with_its_own_revision_keeps_the_errors(self, store: StateStore) -> None:
        self._parent(store, "src", 2)
        self._parent(store, "taken", 1)
        def own(copy: Revision) -> Revision:
            return forked_revision(copy, "src", "2026-02-01T00:00:00Z")

        with pytest.raises(RevConflict):
            store.fork("src", 1, "taken", then=own)
        with pytest.raises(UnknownSession):
            store.fork("nobody", 1, "f1", then=own)
        with pytest.raises(UnknownRevision):
            store.fork("src", 3, "f1", then=own)
        assert store.head("taken").rev == 1 and store.forks("src") == []
        assert [r.rev for r in store.history("taken")] == [0, 1]
        with pytest.raises(UnknownSession):
            store.head("f1")

    @pytest.mark.parametrize("limit", [0, -1, 1001])
    def test_a_limit_out_of_range_is_refused(self, store: StateStore, limit: Any) -> None:
        with pytest.raises(BadInput) as caught:
            store.forks("src", limit=limit)
        assert caught.value.field == "limit"
