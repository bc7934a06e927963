"""``claimfsm eval --index``: the figures of an index named on the command line (the
corpus ingested into it first), on a SQLite file and on PostgreSQL; a second run on the
same index finds the corpus there and scores the same."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.skills.tools.index_pg import open_index

DATA = Path(__file__).resolve().parents[1] / "data"
DATASET = DATA / "eval_dataset.jsonl"
CORPUS = DATA / "eval_corpus.jsonl"


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["eval", *args], catch_exceptions=False)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_eval_scores_the_named_index(kind: str, tmp_path: Path,
                                     request: pytest.FixtureRequest) -> None:
    where = str(tmp_path / "ev.db") if kind == "sqlite" else request.getfixturevalue("pg_url")
    first = cli(str(DATASET), "--corpus", str(CORPUS), "--index", where, "--json")
    assert first.exit_code == 0, first.output
    body = orjson.loads(first.output)
    assert body["claims"] == 6 and body["retrieval"]["hit@5"] == 1.0
    with open_index(where) as idx:
        assert idx.count_documents() == sum(1 for line in CORPUS.open() if line.strip())
    again = orjson.loads(cli(str(DATASET), "--corpus", str(CORPUS), "--index", where,
                             "--json").output)
    assert again["retrieval"] == body["retrieval"] and again["verdict"] == body["verdict"]


def test_an_index_that_cannot_open_is_a_clean_error(tmp_path: Path) -> None:
    res = cli(str(DATASET), "--corpus", str(CORPUS), "--index",
              "postgresql://nobody@127.0.0.1:9/none?connect_timeout=2", "--json")
    assert res.exit_code == 2
    assert orjson.loads(res.output)["error"]["code"] == "STORE_UNAVAILABLE"
