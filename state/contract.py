"""A reusable conformance suite for :class:`claimfsm.state.store.StateStore` backends.

Subclass :class:`StoreContract` in a test module and provide a ``store`` fixture that
yields a fresh, empty store (the pattern of LangGraph's checkpoint-conformance suite)::

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            with MyStore(tmp_path / "x") as s:
                yield s

Override :meth:`StoreContract.reopened` when the backend can be read through a second,
cold instance (a new connection with empty caches): round trips are then checked
through it as well. Needs pytest, so it is not imported by ``state/__init__``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from claimfsm.state.contract_catalog import CatalogContract, HistoryContract
from claimfsm.state.contract_forks import ForksContract
from claimfsm.state.contract_keys import KeyContract
from claimfsm.state.contract_queue import QueueContract
from claimfsm.state.contract_retention import RetentionContract
from claimfsm.state.contract_timers import TimerContract
from claimfsm.state.errors import RevConflict, UnknownRevision, UnknownSession
from claimfsm.state.model import RetryState, Revision, SessionState
from claimfsm.state.store import StateStore

__all__ = ["StoreContract", "make_revision", "make_state", "rich_state"]

BIG = "Évidence ✓ 気候 — " + "The quick brown fox jumps over the lazy dog. " * 300


def make_state(sid: str, **fields: Any) -> SessionState:
    """A small valid state for ``sid`` (``fields`` override the defaults)."""
    values: dict[str, Any] = {"claim": "Sea levels are rising.", "fsm": "PARSE_CLAIM"}
    values.update(fields)
    return SessionState(sid=sid, **values)


def make_revision(
    sid: str, rev: int, state: SessionState | None = None, **fields: Any
) -> Revision:
    """Revision ``rev`` of ``sid`` with parent ``rev - 1`` and a deterministic timestamp."""
    state = state if state is not None else make_state(sid)
    values: dict[str, Any] = {
        "sid": sid, "rev": rev, "parent_rev": None if rev == 0 else rev - 1,
        "fsm": state.fsm, "skill": None if rev == 0 else "step", "envelope": None,
        "state": state, "ts": f"2026-01-01T00:00:{rev % 60:02d}Z", "events": [],
    }
    values.update(fields)
    return Revision(**values)


def rich_state(sid: str) -> SessionState:
    """A state with every field set: large texts, unicode, NUL-led strings, nesting."""
    return SessionState(
        sid=sid,
        claim="Глобальное потепление 🌍 is real; \u0301combining and \x00NUL-led",
        fsm="VERIFY",
        entry_rev=3,
        config={"k": 3, "nested": {"deep": [1, 2.5, None, True]}, "big": BIG},
        subclaims=[{"id": "c1", "text": "漢字 subclaim"}, {"id": "c2", "text": BIG[:300]}],
        plans=[{"q": "sea level rise", "keywords": ["sea", "level"]}],
        tool_requests=[{"tool": "search", "args": {"q": "x"}, "id": "t1"}],
        tool_results=[{"id": "t1", "ok": True, "hits": [{"url": "u1", "snippet": BIG}]}],
        pages={"https://example.org/a": {"text": BIG, "title": "A ✓"},
               "https://example.org/b": {"text": "short", "meta": {"lang": "de"}}},
        policy={"fetched": ["https://example.org/a"]},
        steps=[{"n": 1, "tool": "search"}],
        followups=[{"kw": "rise", "tool": "web_search"}],
        rounds=1,
        evidence={"c1": [{"sentence": BIG[:400], "score": 0.875}], "c2": []},
        judgments=[{"id": "c1", "label": "SUPPORTED", "cites": [0]}],
        verdict={"label": "SUPPORTED", "reasons": ["r1"], "text": BIG},
        memory={"\x00key": "\x00value", "empty": "", "list": []},
        retry=RetryState(state="RETRIEVAL", attempts=2, next_at="2026-01-01T00:00:05Z",
                         code="RATE_LIMITED"),
        error={"code": "X", "msg": "ü"},
    )


def _dump(revisions: Any) -> bytes:
    return orjson.dumps([r.model_dump(mode="json") for r in revisions])


class StoreContract(CatalogContract, HistoryContract, RetentionContract, TimerContract,
                    QueueContract, KeyContract, ForksContract):
    """Behaviour every :class:`StateStore` backend must show."""

    @pytest.fixture
    def store(self) -> Iterator[StateStore]:
        raise NotImplementedError("subclasses provide the store fixture")

    def reopened(self, store: StateStore) -> StateStore:
        """A second view of ``store`` with cold caches (default: the store itself)."""
        return store

    def _chain(self, store: StateStore, sid: str, n: int) -> list[Revision]:
        """Create ``sid`` and commit ``n`` more revisions, each changing the state."""
        state = make_state(sid)
        revisions = [store.create(make_revision(sid, 0, state))]
        for rev in range(1, n + 1):
            state = state.model_copy(update={
                "steps": [*state.steps, {"n": rev}], "rounds": rev,
                "memory": {**state.memory, f"k{rev % 4}": rev},
            })
            revisions.append(store.commit(make_revision(sid, rev, state), expected_rev=rev - 1))
        return revisions

    # -- create -----------------------------------------------------------------------

    def test_create_then_head(self, store: StateStore) -> None:
        first = make_revision("s1", 0)
        assert store.create(first) == first
        assert store.head("s1") == first
        assert store.get("s1", 0) == first
        assert list(store.history("s1")) == [first]

    def test_duplicate_create_conflicts(self, store: StateStore) -> None:
        store.create(make_revision("s1", 0))
        with pytest.raises(RevConflict):
            store.create(make_revision("s1", 0, make_state("s1", claim="other")))
        assert store.head("s1").state.claim == "Sea levels are rising."

    def test_create_must_start_at_zero(self, store: StateStore) -> None:
        with pytest.raises(RevConflict):
            store.create(make_revision("s1", 1))
        with pytest.raises(UnknownSession):
            store.head("s1")

    def test_state_must_carry_the_session_id(self, store: StateStore) -> None:
        with pytest.raises(ValueError, match="sid"):
            store.create(make_revision("s1", 0, make_state("other")))

    # -- compare-and-set --------------------------------------------------------------

    def test_commit_appends(self, store: StateStore) -> None:
        revisions = self._chain(store, "s1", 3)
        assert store.head("s1") == revisions[-1]
        assert [r.rev for r in store.history("s1")] == [0, 1, 2, 3]

    def test_stale_expected_rev_conflicts(self, store: StateStore) -> None:
        self._chain(store, "s1", 2)
        with pytest.raises(RevConflict) as info:
            store.commit(make_revision("s1", 2), expected_rev=1)
        assert info.value.code == "REV_CONFLICT"
        assert store.head("s1").rev == 2

    def test_wrong_rev_number_conflicts(self, store: StateStore) -> None:
        self._chain(store, "s1", 1)
        with pytest.raises(RevConflict):
            store.commit(make_revision("s1", 3, parent_rev=1), expected_rev=1)
        assert store.head("s1").rev == 1

    def test_wrong_parent_conflicts(self, store: StateStore) -> None:
        self._chain(store, "s1", 1)
        with pytest.raises(RevConflict):
            store.commit(make_revision("s1", 2, parent_rev=0), expected_rev=1)
        assert store.head("s1").rev == 1

    def test_expected_rev_ahead_of_head_conflicts(self, store: StateStore) -> None:
        self._chain(store, "s1", 1)
        with pytest.raises(RevConflict):
            store.commit(make_revision("s1", 6), expected_rev=5)
        assert store.head("s1").rev == 1

    def test_loser_of_a_race_sees_conflict_and_winner_stays(self, store: StateStore) -> None:
        self._chain(store, "s1", 1)
        winner = make_revision("s1", 2, make_state("s1", claim="winner"))
        loser = make_revision("s1", 2, make_state("s1", claim="loser"))
        store.commit(winner, expected_rev=1)
        with pytest.raises(RevConflict):
            store.commit(loser, expected_rev=1)
        assert self.reopened(store).get("s1", 2).state.claim == "winner"

    # -- unknowns ---------------------------------------------------------------------

    def test_unknown_session(self, store: StateStore) -> None:
        for call in (lambda: store.head("nope"), lambda: store.get("nope", 0),
                     lambda: store.history("nope"), lambda: store.fork("nope", 0, "x"),
                     lambda: store.commit(make_revision("nope", 1), expected_rev=0)):
            with pytest.raises(UnknownSession) as info:
                call()
            assert info.value.code == "UNKNOWN_SESSION"

    def test_unknown_revision(self, store: StateStore) -> None:
        self._chain(store, "s1", 2)
        for rev in (3, 99, -1):
            with pytest.raises(UnknownRevision) as info:
                store.get("s1", rev)
            assert info.value.code == "UNKNOWN_REVISION"
        with pytest.raises(UnknownRevision):
            store.fork("s1", 3, "s2")

    # -- reads ------------------------------------------------------------------------

    def test_history_and_get_match_what_was_committed(self, store: StateStore) -> None:
        revisions = self._chain(store, "s1", 40)  # crosses several snapshot boundaries
        for view in (store, self.reopened(store)):
            assert _dump(view.history("s1")) == _dump(revisions)
            for rev in (39, 0, 17, 16, 15, 40, 1):
                assert view.get("s1", rev) == revisions[rev]

    def test_sessions_in_creation_order(self, store: StateStore) -> None:
        names = [f"s{(i * 7) % 50:02d}" for i in range(50)]
        for name in names:
            store.create(make_revision(name, 0))
        assert list(store.sessions()) == names
        store.commit(make_revision("s07", 1), expected_rev=0)
        assert list(self.reopened(store).sessions()) == names
        assert store.head("s07").rev == 1 and store.head("s14").rev == 0

    def test_many_sessions_interleaved(self, store: StateStore) -> None:
        states = {f"m{i}": make_state(f"m{i}") for i in range(30)}
        for sid, state in states.items():
            store.create(make_revision(sid, 0, state))
        for rev in range(1, 6):
            for sid, state in list(states.items()):
                states[sid] = state.model_copy(update={"rounds": rev, "memory": {"sid": sid}})
                store.commit(make_revision(sid, rev, states[sid]), expected_rev=rev - 1)
        view = self.reopened(store)
        for sid, state in states.items():
            assert view.head(sid).state == state
            assert view.get(sid, 3).state.rounds == 3

    # -- round trips ------------------------------------------------------------------

    def test_every_field_round_trips(self, store: StateStore) -> None:
        state = rich_state("s1")
        envelope = {"s": "ok", "d": {"evidence": [BIG], "sp": {"rev": 1, "fsm": "VERIFY"}},
                    "e": None, "rb": "none"}
        events = [{"type": "ToolCalled", "args": {"text": BIG}}, {"type": "\x00odd"}]
        first = store.create(make_revision("s1", 0, state))
        second = make_revision("s1", 1, state.model_copy(update={"rounds": 2}),
                               envelope=envelope, events=events)
        store.commit(second, expected_rev=0)
        for view in (store, self.reopened(store)):
            assert view.get("s1", 0) == first
            got = view.get("s1", 1)
            assert got == second
            assert orjson.dumps(got.model_dump(mode="json")) == orjson.dumps(
                second.model_dump(mode="json"))
            assert got.state.retry == state.retry

    def test_field_edits_round_trip(self, store: StateStore) -> None:
        """Deletions, reorders, shrinking lists, None and back: every kind of change."""
        state = rich_state("s1")
        edits: list[dict[str, Any]] = [
            {"pages": {"https://example.org/b": state.pages["https://example.org/b"]}},
            {"pages": {"https://example.org/c": {"text": BIG + "c"}, **state.pages}},
            {"steps": []},
            {"steps": [{"n": 1}, {"n": 2}]},
            {"steps": [{"n": 2}]},
            {"evidence": {"c2": [], "c1": state.evidence["c1"]}},
            {"retry": None, "verdict": None, "error": None},
            {"retry": RetryState(state="EXTRACT", attempts=0)},
            {"memory": {}},
            {"claim": BIG, "fsm": "DONE"},
        ]
        revisions = [store.create(make_revision("s1", 0, state))]
        for rev, edit in enumerate(edits, 1):
            state = state.model_copy(update=edit)
            revisions.append(store.commit(make_revision("s1", rev, state), expected_rev=rev - 1))
        for view in (store, self.reopened(store)):
            got = view.history("s1")
            assert _dump(got) == _dump(revisions)
            assert list(got[2].state.pages) == list(revisions[2].state.pages)

    def test_reads_are_deterministic(self, store: StateStore) -> None:
        a = self._chain(store, "a", 20)
        b = self._chain(store, "b", 20)
        view = self.reopened(store)
        first, again = _dump(view.history("a")), _dump(view.history("a"))
        assert first == again == _dump(a)
        assert _dump(view.history("b")) == first.replace(b'"a"', b'"b"')
        assert _dump(b) == _dump(view.history("b"))

    # -- fork -------------------------------------------------------------------------

    def test_fork_copies_a_prefix(self, store: StateStore) -> None:
        revisions = self._chain(store, "src", 20)
        head = store.fork("src", 17, "dst")
        assert head.rev == 17 and head.sid == "dst" and head.state.sid == "dst"
        copied = self.reopened(store).history("dst")
        assert [r.rev for r in copied] == list(range(18))
        for original, copy in zip(revisions, copied, strict=False):
            assert copy.sid == "dst" and copy.state.sid == "dst"
            assert copy.state.model_copy(update={"sid": "src"}) == original.state
            assert (copy.envelope, copy.events, copy.ts) == (
                original.envelope, original.events, original.ts)
        assert store.verify_chain("dst").ok

    def test_fork_is_independent(self, store: StateStore) -> None:
        self._chain(store, "src", 3)
        store.fork("src", 1, "dst")
        store.commit(make_revision("dst", 2, make_state("dst", claim="fork")), expected_rev=1)
        store.commit(make_revision("src", 4, make_state("src", claim="source")), expected_rev=3)
        view = self.reopened(store)
        assert view.head("dst").state.claim == "fork" and view.head("dst").rev == 2
        assert view.head("src").state.claim == "source" and view.head("src").rev == 4
        assert view.get("src", 2).state.claim == "Sea levels are rising."
        assert list(view.sessions()) == ["src", "dst"]

    def test_fork_onto_existing_session_conflicts(self, store: StateStore) -> None:
        self._chain(store, "src", 2)
        store.create(make_revision("dst", 0))
        with pytest.raises(RevConflict):
            store.fork("src", 1, "dst")
        assert store.head("dst").rev == 0

    def test_verify_chain_of_a_sound_session(self, store: StateStore) -> None:
        self._chain(store, "s1", 20)
        check = store.verify_chain("s1")
        assert check.ok and check.revisions == 21 and check.problem is None
        with pytest.raises(UnknownSession):
            store.verify_chain("nope")
