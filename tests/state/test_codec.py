"""The storage encoding: blobs, field deltas, byte splicing, hashing, and the whole
encode -> rows -> decode path on random state sequences (no SQLite involved).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from claimfsm.state import codec
from claimfsm.state import encode as encoding
from claimfsm.state.codec import BLOB_MIN, CodecError
from claimfsm.state.model import RetryState, Revision, SessionState
from claimfsm.state.sqlite.decode import ChainDecoder
from claimfsm.state.sqlite.rows import encode_revision, trusted

BIG = "ü" * 200  # 400 UTF-8 bytes from 200 characters
text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["\x00", "\x00B", "\x00Bdead", "\x00E", "\x00J" + "0" * 64, BIG, "x" * 256,
                     "y" * 255, "é" * 128, "é" * 127]),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**12),
                    st.floats(allow_nan=False, allow_infinity=False), text)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.dictionaries(st.text(max_size=6), inner, max_size=5)),
    max_leaves=25,
)


def _store() -> tuple[codec.Sink, Any]:
    sink: codec.Sink = {}

    def fetch(digest: str) -> bytes:
        return sink[digest]

    return sink, fetch


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_externalize_then_resolve_is_identity(value: Any) -> None:
    sink, fetch = _store()
    enc = codec.externalize(value, sink)
    assert orjson.dumps(codec.resolve(enc, fetch)) == orjson.dumps(value)
    for raw in sink.values():
        assert len(raw) >= BLOB_MIN
    for leaf in _strings(enc):  # a NUL-led string is a reference or an escape, never raw
        assert leaf[:1] != "\x00" or leaf[:2] in ("\x00B", "\x00E")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [leaf for item in items for leaf in _strings(item)]


def test_large_strings_become_blobs_by_utf8_size() -> None:
    sink, _ = _store()
    enc = codec.externalize({"a": "é" * 128, "b": "é" * 127, "c": "x" * 255}, sink)
    assert enc["a"].startswith("\x00B") and enc["b"] == "é" * 127 and enc["c"] == "x" * 255
    assert list(sink.values()) == [("é" * 128).encode()]
    assert enc["a"][2:] == hashlib.sha256(("é" * 128).encode()).hexdigest()


def test_page_entries_are_whole_blobs_sharing_their_texts() -> None:
    sink, fetch = _store()
    item, whole = codec.externalize_field(codec.PAGE_FIELD, sink)
    pages = whole({"u1": {"text": BIG}, "u2": {"text": BIG, "title": "t"}})
    assert all(ref.startswith("\x00J") for ref in pages.values())
    assert len(sink) == 3  # two entries, one shared text
    assert codec.resolve(pages, fetch) == {"u1": {"text": BIG}, "u2": {"text": BIG, "title": "t"}}
    assert item({"text": BIG}) == pages["u1"]


@settings(max_examples=100, deadline=None)
@given(json_values, json_values)
def test_field_ops_rebuild_the_child_exactly(parent: Any, child: Any) -> None:
    sink, _ = _store()
    parent_enc = codec.externalize(parent, sink)
    def ext(v: Any) -> Any:
        return codec.externalize(v, sink)
    enc, op = codec.diff_value(child, parent, parent_enc, ext, ext)
    assert orjson.dumps(enc) == orjson.dumps(codec.externalize(child, sink))
    rebuilt = codec.apply_op(orjson.loads(orjson.dumps(parent_enc)), orjson.loads(orjson.dumps(op)))
    assert orjson.dumps(rebuilt) == orjson.dumps(enc)


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=6), st.lists(json_values, max_size=4),
       st.dictionaries(st.text(max_size=4), json_values, max_size=4))
def test_appends_and_key_updates_use_small_ops(base: list[Any], tail: list[Any],
                                                extra: dict[str, Any]) -> None:
    sink, _ = _store()
    def ext(v: Any) -> Any:
        return codec.externalize(v, sink)
    if base and tail:
        _, op = codec.diff_value(base + tail, base, ext(base), ext, ext)
        assert op[0] == codec.OP_APPEND and orjson.dumps(op[1]) == orjson.dumps(ext(tail))
    parent = {"keep": 1, "drop": 2, **{f"_{k}": v for k, v in extra.items()}}
    child = {k: v for k, v in parent.items() if k != "drop"}
    child["new"] = [1]
    _, op = codec.diff_value(child, parent, ext(parent), ext, ext)
    assert op == [codec.OP_UPDATE, {"new": [1]}, ["drop"]]


def test_reordered_keys_and_retyped_scalars_are_changes() -> None:
    assert not codec.same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not codec.same([1], [True]) and not codec.same(1, 1.0)
    assert codec.same({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})
    sink: codec.Sink = {}
    def ext(v: Any) -> Any:
        return codec.externalize(v, sink)
    parent = {"a": 1, "b": 2, "c": 3}
    enc, op = codec.diff_value({"b": 2, "a": 1, "c": 3}, parent, ext(parent), ext, ext)
    assert op[0] == codec.OP_SET and list(enc) == ["b", "a", "c"]


@settings(max_examples=100, deadline=None)
@given(st.lists(json_values, max_size=5), st.lists(json_values, max_size=5))
def test_splice_append_matches_serialising_the_whole_list(head: list[Any], tail: list[Any]) -> None:
    spliced = codec.splice_append(orjson.dumps(head), orjson.dumps(tail))
    assert spliced == orjson.dumps(head + tail)


def test_ops_that_do_not_fit_are_codec_errors() -> None:
    for parent, op in (([1], [codec.OP_UPDATE, {}, []]), ({}, [codec.OP_APPEND, [1]]),
                       (1, [9, 1]), (1, "x"), (1, [])):
        with pytest.raises(CodecError):
            codec.apply_op(parent, op)


def test_blob_packing_round_trips_and_detects_damage() -> None:
    text_bytes = ("The same sentence again. " * 200).encode()
    z, data = codec.pack_blob(text_bytes)
    assert z == 1 and len(data) < len(text_bytes) // 5
    assert codec.unpack_blob(z, data) == text_bytes
    assert codec.pack_blob(b"short") == (0, b"short")
    with pytest.raises(CodecError):
        codec.unpack_blob(1, b"not zlib")
    with pytest.raises(CodecError):
        codec.unpack_blob(7, b"")


def test_revision_hash_covers_every_input() -> None:
    header = codec.header_bytes("s", 1, 0, "X", "skill", "t")
    digests = [codec.field_digest("claim", b'"c"')]
    base = codec.revision_hash(codec.GENESIS, header, b"[null,[]]", digests)
    assert base == codec.revision_hash(codec.GENESIS, header, b"[null,[]]", digests)
    variants = [
        codec.revision_hash(b"\x01" * 32, header, b"[null,[]]", digests),
        codec.revision_hash(codec.GENESIS, codec.header_bytes("s", 1, 0, "X", "skill", "u"),
                            b"[null,[]]", digests),
        codec.revision_hash(codec.GENESIS, header, b"[null,[1]]", digests),
        codec.revision_hash(codec.GENESIS, header, b"[null,[]]",
                            [codec.field_digest("claim", b'"d"')]),
        codec.revision_hash(codec.GENESIS, header, b"[null,[]]",
                            [codec.field_digest("fsm", b'"c"')]),
    ]
    assert len({base, *variants}) == 6


def test_trusted_models_equal_validated_ones() -> None:
    values = SessionState(sid="s", claim="c", fsm="X", retry=RetryState(state="X", attempts=1))
    dumped = values.model_dump(mode="json")
    built = trusted(SessionState, {**dumped, "retry": trusted(RetryState, dumped["retry"])})
    assert built == values
    assert orjson.dumps(built.model_dump(mode="json")) == orjson.dumps(dumped)


# -- encode -> rows -> decode, on random sequences of states -------------------------

field_updates = st.fixed_dictionaries({}, optional={
    "claim": text,
    "fsm": st.sampled_from(["PARSE_CLAIM", "RETRIEVAL", "DONE"]),
    "rounds": st.integers(0, 5),
    "config": st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    "steps": st.lists(st.dictionaries(st.text(max_size=3), json_values, max_size=2), max_size=4),
    "pages": st.dictionaries(st.sampled_from(["u1", "u2", "u3"]),
                             st.fixed_dictionaries({"text": text}), max_size=3),
    "evidence": st.dictionaries(st.sampled_from(["c1", "c2"]),
                                st.lists(st.fixed_dictionaries({"s": text}), max_size=2)),
    "retry": st.one_of(st.none(), st.builds(RetryState, state=st.just("X"),
                                            attempts=st.integers(0, 3))),
    "verdict": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), json_values, max_size=2)),
})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(field_updates, st.booleans()), min_size=1, max_size=12),
       st.integers(1, 5))
def test_rows_decode_to_the_committed_revisions(updates: list[tuple[dict[str, Any], bool]],
                                                 snapshot_every: int) -> None:
    state = SessionState(sid="s", claim="c", fsm="PARSE_CLAIM")
    revisions, rows, blobs = [], [], {}
    parent = None
    for rev, (update, append_step) in enumerate([({}, False), *updates]):
        if append_step:
            update = {**update, "steps": [*update.get("steps", state.steps), {"n": rev}]}
        state = state.model_copy(update=update)
        revision = Revision(sid="s", rev=rev, parent_rev=rev - 1 if rev else None, fsm=state.fsm,
                            skill="k", envelope={"d": BIG} if rev % 2 else None, state=state,
                            ts=str(rev), events=[{"rev": rev}])
        encoded = encode_revision(revision, parent, snapshot_every)
        parent = encoded.entry
        revisions.append(revision)
        rows.append(encoded.row)
        blobs.update(encoded.blobs)
    decoder = ChainDecoder("s")
    for revision, row in zip(revisions, rows, strict=True):
        decoder.feed(row[2], row[6])
        assert decoder.hash_of(row) == row[8]
        decoder.advance(row[8])
        got = decoder.revision(row, blobs.__getitem__).revision
        assert orjson.dumps(got.model_dump(mode="json")) == orjson.dumps(
            revision.model_dump(mode="json"))
        assert got == revision


# Logs and lists of short strings large enough to be blobs, with strings either side of
# the 64 characters from which one can become a blob, escapes, NULs and nested containers
# either side of the 1,024 bytes from which one is shared on its own.
edge_text = st.one_of(
    st.text(max_size=70), st.sampled_from(["a" * 63, "a" * 64, "é" * 63, "é" * 64, '"' * 40,
                                           "\\" * 40, "\n" * 63, "\x00x", "ü" * 130]),
)
long_values = st.recursive(
    st.one_of(st.none(), st.integers(-(2**53), 2**53), edge_text),
    lambda inner: st.one_of(st.lists(inner, max_size=60),
                            st.dictionaries(st.text(max_size=8), inner, max_size=30)),
    max_leaves=200,
)


@settings(max_examples=300, deadline=None)
@given(long_values)
@example([[f"entry {i:03d}" for i in range(120)], "tail"])  # a nested list shared alone
@example({"log": [f"entry {i:03d}" for i in range(120)], "n": 1})
@example([f"entry {i:03d}" for i in range(120)] + ["a" * 64])
@example([f"entry {i:03d}" for i in range(40)] + ["ü" * 130, 7, None])  # a blob string
@example({f"k{i}": "\U0001F600" * 64 if i == 5 else i for i in range(60)})  # 64 characters
@example([f"entry {i:03d}" for i in range(40)] + ["\x00nul"])  # an escape
def test_a_plain_blob_is_the_walks_blob(value: Any) -> None:
    """The shortcut that serialises (or copies) a flat container at once gives the very
    encoding, blobs and references of the item-by-item walk: in a state field, as an
    item, and in an envelope's data."""
    fast: codec.Sink = {}
    slow: codec.Sink = {}

    def encode(sink: codec.Sink) -> bytes:
        item, whole = codec.externalize_field("memory", sink)
        envelope = {"s": "ok", "d": {"v": value, "w": [value, "z"]}, "e": None}
        return orjson.dumps([whole({"v": value, "w": [value, "z"]}), whole(value),
                             item(value), codec.externalize_extra(envelope, [value], sink)])

    got = encode(fast)
    shortcut = encoding._flat
    encoding._flat = lambda value: False  # type: ignore[assignment]
    try:
        want = encode(slow)
    finally:
        encoding._flat = shortcut
    assert got == want
    assert fast == slow


def test_a_log_of_short_strings_is_one_blob_without_a_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    log = [f"step {i}: ok" for i in range(200)]
    calls: list[Any] = []
    real = encoding.externalize
    monkeypatch.setattr(encoding, "externalize", lambda v, s: calls.append(v) or real(v, s))
    sink: codec.Sink = {}
    ref = codec.externalize_field("memory", sink)[0](log)
    assert ref == "\x00J" + hashlib.sha256(orjson.dumps(log)).hexdigest()
    assert calls == []  # serialised at once, not string by string
