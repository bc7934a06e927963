"""Ingest is bounded and streams: a line, a folder's depth and size, a symbolic link out of
the folder, ids seen twice, the errors it lists, and the text it holds before writing.
Each limit is tested at the limit and one past it."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.skills.tools import folder as folder_mod
from claimfsm.skills.tools import ingest_report
from claimfsm.skills.tools.bounded import Bounds, OverLimit, SeenKeys, read_lines
from claimfsm.skills.tools.folder import MAX_FOLDER_DEPTH, ingest_folder, read_folder
from claimfsm.skills.tools.index import Document, EvidenceIndex
from claimfsm.skills.tools.ingest import ingest_documents
from claimfsm.skills.tools.ingest_report import MAX_LISTED_ERRORS


def lines_of(data: bytes, bounds: Bounds) -> list[tuple[int, int, bytes]]:
    return list(read_lines(io.BytesIO(data), bounds))


def test_a_line_exactly_at_its_bound_is_read_and_one_byte_more_is_refused() -> None:
    assert lines_of(b"abc\n", Bounds(line=4)) == [(1, 4, b"abc\n")]
    assert lines_of(b"abcd", Bounds(line=4)) == [(1, 4, b"abcd")]
    with pytest.raises(OverLimit) as exc:
        lines_of(b"ok\nabcd\n", Bounds(line=4))
    assert exc.value.line == 2 and exc.value.msg == "line 2: more than 4 bytes"
    assert exc.value.code == "INPUT_TOO_LARGE"


def test_the_line_count_and_the_size_are_bounded_too() -> None:
    assert len(lines_of(b"a\n\nb\n", Bounds(line=10, lines=3))) == 3
    with pytest.raises(OverLimit, match="more than 3 lines"):
        lines_of(b"a\n\nb\nc\n", Bounds(line=10, lines=3))
    assert len(lines_of(b"ab\ncd\n", Bounds(line=10, size=6))) == 2
    with pytest.raises(OverLimit, match="more than 5 bytes") as exc:
        lines_of(b"ab\ncd\n", Bounds(line=10, size=5))
    assert exc.value.line == 2


@pytest.mark.parametrize("spill", [10, 10_000])
def test_seen_keys_answer_alike_in_memory_and_spilled(spill: int) -> None:
    with SeenKeys(spill=spill) as seen:
        assert [seen.first(f"k{i % 300}", i) for i in range(1, 601)] == (
            [None] * 300 + list(range(1, 301)))
        assert len(seen) == 300 and "k299" in seen and "k300" not in seen
        seen.put("k1", 999)
        assert seen.get("k1") == 999 and seen.get("nope") is None
        assert (seen._db is not None) == (spill == 10)  # past the threshold: on disk


class SpyIndex:
    """Records what each batch write holds, without an index behind it."""

    def __init__(self) -> None:
        self.batches: list[list[Document]] = []

    def upsert_documents(self, docs: Iterable[Document], *, source: str | None = None,
                         ) -> tuple[int, int]:
        self.batches.append(list(docs))
        return len(self.batches[-1]), 0


def _text_of(batch: list[Document]) -> int:
    return sum(len(d.text) + len(d.title) for d in batch)


def test_a_folder_is_written_as_it_is_read_in_batches_of_bounded_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folder_mod, "BATCH_BYTES", 10_000)
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(12):
        (root / f"f{i:02}.txt").write_text(f"doc {i} " + "word " * 800)  # ~4 KB each
    spy = SpyIndex()
    report = ingest_folder(spy, root)  # type: ignore[arg-type]
    assert report.added == report.lines == 12
    # Was: one batch of all 12 (48 KB held at once); now at most the limit plus one file.
    assert len(spy.batches) > 1
    assert max(_text_of(b) for b in spy.batches) < 10_000 + 4_100


def test_a_jsonl_load_holds_bounded_text_too(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import claimfsm.skills.tools.ingest as ingest_mod

    monkeypatch.setattr(ingest_mod, "BATCH_BYTES", 10_000)
    docs = tmp_path / "d.jsonl"
    docs.write_text("".join(json.dumps({"id": str(i), "title": "T", "text": "word " * 800})
                            + "\n" for i in range(12)))
    spy = SpyIndex()
    report = ingest_documents(spy, docs)  # type: ignore[arg-type]
    assert report.added == 12 and len(spy.batches) > 1
    assert max(_text_of(b) for b in spy.batches) < 10_000 + 4_100


def _nest(root: Path, depth: int) -> Path:
    """A folder ``depth`` levels below ``root`` (made without recursion)."""
    here = root
    for _ in range(depth):
        here = here / "d"
        here.mkdir()
    return here


def test_a_folder_at_the_depth_limit_is_read_and_one_deeper_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "deep"
    root.mkdir()
    (_nest(root, MAX_FOLDER_DEPTH) / "at.txt").write_text("Water boils at 100 degrees.")
    last = _nest(root / ("d/" * MAX_FOLDER_DEPTH).rstrip("/"), 1)
    (last / "below.txt").write_text("Ice melts at 0 degrees.")
    items = dict(read_folder(root))
    at = "d/" * MAX_FOLDER_DEPTH + "at.txt"
    assert isinstance(items[at], Document)
    deeper = "d/" * (MAX_FOLDER_DEPTH + 1)
    err = items[deeper.rstrip("/")]
    assert not isinstance(err, Document) and err.code == "INPUT_TOO_LARGE"
    assert f"deeper than {MAX_FOLDER_DEPTH} folder levels" in err.msg
    assert not any(k.endswith("below.txt") for k in items)


def _remove(top: Path) -> None:
    """Delete a tree bottom-up without recursion (``shutil.rmtree`` recurses, and so does
    pytest's clean-up of old temporary folders: a 1,200-deep tree would break both)."""
    folders, todo = [], [top]
    while todo:
        here = todo.pop()
        folders.append(here)
        for entry in os.scandir(here):
            if entry.is_dir(follow_symlinks=False):
                todo.append(Path(entry.path))
            else:
                os.unlink(entry.path)
    for here in reversed(folders):
        here.rmdir()


@pytest.fixture
def deep_folder() -> Iterator[Path]:
    """A folder holding ``top.txt`` and a file 1,200 folders down; outside pytest's
    temporary folders, and removed here."""
    root = Path(tempfile.mkdtemp(prefix="claimfsm-deep-"))
    try:
        (_nest(root, 1200) / "a.txt").write_text("Water boils.")
        (root / "top.txt").write_text("Water boils at 100 degrees.")
        yield root
    finally:
        _remove(root)


def test_a_folder_1200_deep_is_a_code_not_a_recursion_error(
        deep_folder: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["ingest", str(deep_folder), "--db",
                                    str(tmp_path / "i.db"), "--json", "--no-embed"])
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.output)
    assert body["added"] == 1 and body["lines"] == 1
    assert [e["code"] for e in body["errors"]] == ["INPUT_TOO_LARGE"]


def test_symbolic_links_out_of_the_folder_are_reported_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("The launch code is 0000.")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "more.txt").write_text("Also private.")
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "real.txt").write_text("Sea ice thins in summer.")
    (root / "leak.txt").symlink_to(secret)
    (root / "away").symlink_to(outside, target_is_directory=True)
    (root / "alias.txt").symlink_to(root / "sub" / "real.txt")  # inside: read
    (root / "loop").symlink_to(root, target_is_directory=True)  # inside: never entered
    with EvidenceIndex(sqlite3.connect(":memory:")) as index:
        report = ingest_folder(index, root)
        assert index.search("launch code") == [] and index.search("private") == []
        assert {h.doc_id for h in index.search("sea ice")} == {"alias.txt", "sub/real.txt"}
    codes = {e.field: e.code for e in report.errors}
    assert codes == {"leak.txt": "OUTSIDE_FOLDER", "away": "OUTSIDE_FOLDER"}
    # Document files: alias.txt, leak.txt, sub/real.txt; the linked folder is not one.
    assert (report.added, report.lines, report.skipped) == (2, 3, 1)
    assert report.codes == {"OUTSIDE_FOLDER": 1}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_called_txt_is_never_opened(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    os.mkfifo(root / "pipe.txt")  # opening it to read would wait for a writer forever
    (root / "ok.txt").write_text("Water boils.")
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(len(list(read_folder(root)))),
                              daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert done == [1]


def test_an_id_seen_twice_is_a_duplicate_and_the_first_line_wins(tmp_path: Path) -> None:
    docs = tmp_path / "d.jsonl"
    docs.write_text("".join(json.dumps({"id": "same", "title": "T", "text": f"text {i}"})
                            + "\n" for i in range(1000)))
    res = CliRunner().invoke(main, ["ingest", str(docs), "--db", str(tmp_path / "i.db"),
                                    "--no-embed"])
    assert res.exit_code == 0
    # Was "added 2 of 1000 lines": one per batch of 500, each replacing the last.
    assert "added 1 of 1000 lines; 0 unchanged; 999 skipped (DUPLICATE_ID 999)" in res.stdout
    assert "line 2: id 'same' already on line 1 (skipped)" in res.stderr
    with EvidenceIndex.open(tmp_path / "i.db") as index:
        assert [h.snippet for h in index.search("text")] == ["text 0"]


def test_a_report_lists_a_bounded_number_of_errors_and_counts_them_all(
        tmp_path: Path) -> None:
    docs = tmp_path / "d.jsonl"
    docs.write_bytes(b"not json\n" * (MAX_LISTED_ERRORS + 500)
                     + b'{"id": "a", "title": "T", "text": "Water boils."}\n')
    with EvidenceIndex(sqlite3.connect(":memory:")) as index:
        report = ingest_documents(index, docs)
    assert len(report.errors) == MAX_LISTED_ERRORS
    assert (report.added, report.skipped, report.lines) == (1, MAX_LISTED_ERRORS + 500,
                                                            MAX_LISTED_ERRORS + 501)
    assert report.codes == {"BAD_JSON": MAX_LISTED_ERRORS + 500}
    res = CliRunner().invoke(main, ["ingest", str(docs), "--db", str(tmp_path / "i.db"),
                                    "--no-embed"])
    assert f"(the first {MAX_LISTED_ERRORS} problems are listed)" in res.stderr
    assert ingest_report.MAX_LISTED_ERRORS == MAX_LISTED_ERRORS
