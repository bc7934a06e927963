"""``eval`` and ``verify`` agree: after ``claimfsm ingest`` of a Climate-FEVER-format corpus,
``claimfsm verify`` on each claim of the test dataset gives the verdict, the ranked
evidence and the citations that ``eval`` computes for it, and ``eval --json`` scores
exactly those verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.profile import Profile
from claimfsm.eval.data import CLAIM_LABELS, read_dataset
from claimfsm.eval.metrics import classification, doc_of
from claimfsm.eval.run import open_engine, ranked_documents, run_claim
from claimfsm.skills.embed import load_embedder
from tests.support.components import need_semantic

DATA = Path(__file__).resolve().parents[1] / "data"
DATASET = DATA / "eval_dataset.jsonl"
CORPUS = DATA / "eval_corpus.jsonl"


def cli(*args: str) -> tuple[int, Any]:
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return res.exit_code, orjson.loads(res.stdout)


def _agree(tmp_path: Path, retrieval: str, embed: str) -> None:
    db = str(tmp_path / "cf.db")
    code, report = cli("ingest", str(CORPUS), "--db", db, "--json", embed)
    assert code == 0 and report["errors"] == []
    data = read_dataset(DATASET)
    profile = Profile(retrieval="hybrid" if retrieval == "hybrid" else "lexical")
    embedder = load_embedder("minilm") if retrieval == "hybrid" else None
    engine, _ = open_engine(CORPUS, embedder=embedder, cache_dir=None)
    verdicts: list[tuple[str, str]] = []
    gold = {g.id: g.label for g in data.gold}
    try:
        for claim in data.claims:
            run = run_claim(engine, claim, profile.config())
            code, out = cli("verify", claim.claim, "--db", db, "--json", "--retrieval", retrieval)
            assert code == 0, out
            assert out["verdict"] == run.label, claim.claim
            code, shown = cli("show", out["sid"], "--db", db, "--json")
            state = shown["state"]
            assert ranked_documents(state["evidence"]) == run.ranked, claim.claim
            assert tuple(doc_of(c) for c in state["verdict"]["cites"]) == run.cites
            shown_ids = {e["id"] for sub in out["subclaims"] for e in sub["evidence"]}
            assert shown_ids <= {e["id"] for sub in state["evidence"].values() for e in sub}
            verdicts.append((gold[claim.id], out["verdict"]))
    finally:
        engine.close()
    assert len(verdicts) == len(data.claims) == 6
    assert {label for _, label in verdicts} != {"NOT_ENOUGH_INFO"}  # something was found
    code, scored = cli("eval", str(DATASET), "--corpus", str(CORPUS), "--json",
                       "--retrieval", retrieval)
    assert code == 0
    mine = classification(verdicts, CLAIM_LABELS)
    assert scored["verdict"]["confusion"] == mine.confusion
    assert scored["verdict"]["accuracy"] == mine.accuracy


def test_verify_gives_what_eval_computes_lexical(tmp_path: Path) -> None:
    _agree(tmp_path, "lexical", "--no-embed")


def test_verify_gives_what_eval_computes_hybrid(tmp_path: Path) -> None:
    need_semantic()
    _agree(tmp_path, "hybrid", "--embed")
