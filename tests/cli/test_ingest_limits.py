"""Ingest is bounded: a document over --max-doc-bytes is reported and skipped, a line
with no end stops the reading after the limit, and an index that cannot be written is an
error (exit 2), not a skipped line."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from tests.support.privileges import cli_unprivileged, make_readonly


def ingest(*args: str) -> Result:
    res = CliRunner().invoke(main, ["ingest", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res


def test_a_document_over_the_limit_is_reported_and_skipped(tmp_path: Path) -> None:
    docs = tmp_path / "d.jsonl"
    docs.write_bytes(orjson.dumps({"id": "big", "title": "Big", "text": "x " * 3000}) + b"\n"
                     + orjson.dumps({"id": "ok", "title": "Ok", "text": "Water boils."}) + b"\n")
    res = ingest(str(docs), "--max-doc-bytes", "1000", "--db", str(tmp_path / "i.db"),
                 "--json")
    body = orjson.loads(res.output)
    assert res.exit_code == 0 and body["added"] == 1
    assert body["errors"][0]["line"] == 1 and "limit is 1000" in body["errors"][0]["msg"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_file_without_line_ends_is_read_only_up_to_the_limit(tmp_path: Path) -> None:
    res = ingest("/dev/zero", "--max-doc-bytes", "1000", "--db", str(tmp_path / "i.db"),
                 "--json")
    body = orjson.loads(res.output)
    assert body["added"] == 0 and "more than" in body["errors"][0]["msg"]


def test_a_folder_file_over_the_limit_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "small.txt").write_text("Water boils at 100 degrees.")
    (folder / "large.txt").write_text("word " * 1000)
    res = ingest(str(folder), "--max-doc-bytes", "500", "--db", str(tmp_path / "i.db"),
                 "--json")
    body = orjson.loads(res.output)
    assert body["added"] == 1 and "large.txt" in body["errors"][0]["msg"]


def test_ingest_into_a_read_only_database_fails(tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    docs = tmp_path / "d.jsonl"
    docs.write_text('{"id": "a", "title": "A", "text": "Water boils."}\n')
    assert ingest(str(docs), "--db", str(db)).exit_code == 0
    make_readonly(db)
    # In a child that file modes bind, as root too (CI runs as root).
    res = cli_unprivileged("ingest", str(docs), "--db", str(db), cwd=tmp_path)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "error: STORE_" in res.stderr and "Traceback" not in res.stderr
