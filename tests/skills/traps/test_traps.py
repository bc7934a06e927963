"""The trap suite: claims that share a corpus sentence's words but not its meaning.

Every claim of ``traps.jsonl`` runs a full session on the demo store with the default
profile, as ``claimfsm verify`` on ``make demo``'s store does (seeded index: the demo
documents and KB facts; ``Engine.start`` writes the profile into the session). A role
swap, reversed cause, wrong number, negation or substituted entity that comes out
SUPPORTS is the worst error a fact-checker can meet: no trap may. The true paraphrases
guard the other side: a judge that blocks everything would pass the traps, so at least
90% of them must stay SUPPORTS.

The dataset's own checks (categories, ids, cited sentences, limits, the eval reader) run
without the engine. See README.md here for how the rows were written.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from claimfsm import Engine, EngineConfig
from claimfsm.cli.main import main
from claimfsm.engine.errors import check_claim
from claimfsm.engine.runtime import DEMO_DOCS, DEMO_KB
from claimfsm.eval.data import read_dataset
from claimfsm.skills.context import FixedClock
from claimfsm.skills.limits import MAX_SUBCLAIMS
from claimfsm.skills.parse_claim import subclaims
from claimfsm.skills.tools.sentences import split_sentences

HERE = Path(__file__).resolve().parent
TRAPS = HERE / "traps.jsonl"
CORPUS = HERE / "corpus.jsonl"

PARAPHRASE = "paraphrase"
TRAP_CATEGORIES = ("role_swap", "reversed_cause", "wrong_number", "negation",
                   "substituted_entity")
MIN_PER_CATEGORY = 25
MIN_PARAPHRASES_SUPPORTED = 0.9

ROWS: list[dict[str, Any]] = [json.loads(line) for line in TRAPS.read_text().splitlines()
                              if line.strip()]


def _demo_sentences() -> dict[str, tuple[str, str]]:
    """``"doc:index"`` (or a KB fact's id) -> (title, sentence), split as EXTRACT does."""
    out: dict[str, tuple[str, str]] = {}
    for line in DEMO_DOCS.read_text().splitlines():
        doc = json.loads(line)
        for i, sentence in enumerate(split_sentences(doc["text"])):
            out[f"{doc['id']}:{i}"] = (doc["title"], sentence)
    for line in DEMO_KB.read_text().splitlines():
        fact = json.loads(line)
        out[fact["id"]] = (fact["subject"],
                           f"{fact['subject']} {fact['relation']} {fact['object']}")
    return out


SENTENCES = _demo_sentences()


def _doc(evidence_id: str) -> str:
    return evidence_id.rsplit(":", 1)[0] if ":" in evidence_id else evidence_id


@pytest.fixture(scope="module")
def verdicts() -> Iterator[dict[str, dict[str, Any]]]:
    """Every claim's final state on one shared demo engine: ``{"fsm", "label", "reasons"}``."""
    # A fixed clock keeps sessions byte-identical between runs; the store is in memory.
    config = EngineConfig(clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    with Engine.open(None, config=config) as engine:
        assert engine.profile.is_default
        out: dict[str, dict[str, Any]] = {}
        for row in ROWS:
            head = engine.driver.run(engine.start(row["claim"]).sid)
            verdict = head.state.verdict or {}
            out[row["claim_id"]] = {"fsm": head.fsm, "label": verdict.get("label"),
                                    "reasons": list(verdict.get("reasons", []))}
        yield out


# -- the engine on the traps -------------------------------------------------------------


def test_every_claim_runs_to_done(verdicts: dict[str, dict[str, Any]]) -> None:
    # A session that fails is no SUPPORTS either; it must not pass the trap test that way.
    stuck = [f"{cid}: {v['fsm']}" for cid, v in verdicts.items()
             if v["fsm"] != "DONE" or v["label"] is None]
    assert stuck == []


# Issue 29's goal, not reached yet by the judge's general rules: 25 of 181 traps still get
# SUPPORTS (2026-11-26; docs/judge.md lists what each remaining kind needs). Strict, so
# the marker must go the day every trap is caught; the ratchet below keeps the count
# from growing meanwhile.
@pytest.mark.xfail(strict=True, reason="issue 29: 25 traps still SUPPORTS (see docs/judge.md)")
def test_no_trap_is_supported(verdicts: dict[str, dict[str, Any]]) -> None:
    offenders = [row for row in ROWS if row["category"] != PARAPHRASE
                 and verdicts[row["claim_id"]]["label"] == "SUPPORTS"]
    by_category = Counter(row["category"] for row in offenders)
    lines = [f"{row['claim_id']} [{row['category']}] {row['claim']}  "
             f"(expected {row['claim_label']}; {'; '.join(verdicts[row['claim_id']]['reasons'])})"
             for row in offenders]
    summary = ", ".join(f"{cat} {by_category[cat]}" for cat in TRAP_CATEGORIES)
    if offenders:
        pytest.fail(f"{len(offenders)} traps got SUPPORTS ({summary}):\n" + "\n".join(lines),
                    pytrace=False)


# The most traps per category that may still get SUPPORTS: today's judge (issue 29's
# checks), so a change that lets more through fails here.
SUPPORTED_AT_MOST = {"role_swap": 8, "reversed_cause": 6, "wrong_number": 0,
                     "negation": 8, "substituted_entity": 3}


def test_supported_traps_do_not_grow(verdicts: dict[str, dict[str, Any]]) -> None:
    got = Counter(row["category"] for row in ROWS if row["category"] != PARAPHRASE
                  and verdicts[row["claim_id"]]["label"] == "SUPPORTS")
    assert set(SUPPORTED_AT_MOST) == set(TRAP_CATEGORIES)
    over = {c: got[c] for c in TRAP_CATEGORIES if got[c] > SUPPORTED_AT_MOST[c]}
    assert not over, f"more traps SUPPORTS than the ratchet allows: {over}"


def test_true_paraphrases_stay_supported(verdicts: dict[str, dict[str, Any]]) -> None:
    rows = [row for row in ROWS if row["category"] == PARAPHRASE]
    missed = [f"{row['claim_id']} {row['claim']}  ({verdicts[row['claim_id']]['label']}: "
              f"{'; '.join(verdicts[row['claim_id']]['reasons'])})"
              for row in rows if verdicts[row["claim_id"]]["label"] != "SUPPORTS"]
    share = 1 - len(missed) / len(rows)
    if share < MIN_PARAPHRASES_SUPPORTED:
        pytest.fail(f"{share:.1%} of paraphrases SUPPORTS, below "
                    f"{MIN_PARAPHRASES_SUPPORTED:.0%}; not SUPPORTS:\n" + "\n".join(missed),
                    pytrace=False)


# -- the dataset itself --------------------------------------------------------------------


def test_every_category_has_enough_rows_and_the_right_label() -> None:
    counts = Counter(row["category"] for row in ROWS)
    assert set(counts) == {*TRAP_CATEGORIES, PARAPHRASE}
    assert all(n >= MIN_PER_CATEGORY for n in counts.values()), counts
    for row in ROWS:
        # A paraphrase is true by construction; a trap is refuted or left open, never true.
        allowed = {"SUPPORTS"} if row["category"] == PARAPHRASE else {
            "REFUTES", "NOT_ENOUGH_INFO"}
        assert row["claim_label"] in allowed, row["claim_id"]
        assert {e["evidence_label"] for e in row["evidences"]} == {row["claim_label"]}, \
            row["claim_id"]


def test_ids_and_claims_are_unique() -> None:
    ids = Counter(row["claim_id"] for row in ROWS)
    claims = Counter(" ".join(row["claim"].lower().split()) for row in ROWS)
    assert [i for i, n in ids.items() if n > 1] == []
    assert [c for c, n in claims.items() if n > 1] == []


def test_every_cited_sentence_is_in_the_demo_corpus() -> None:
    problems: list[str] = []
    for row in ROWS:
        assert row["evidences"], row["claim_id"]
        for ev in row["evidences"]:
            found = SENTENCES.get(ev["evidence_id"])
            if found is None:
                problems.append(f"{row['claim_id']}: no sentence {ev['evidence_id']}")
            elif found[1] != ev["evidence"]:
                problems.append(f"{row['claim_id']}: {ev['evidence_id']} is not the text "
                                f"cited: {found[1]!r}")
        cited = list(dict.fromkeys(_doc(ev["evidence_id"]) for ev in row["evidences"]))
        if row["doc_ids"] != cited:
            problems.append(f"{row['claim_id']}: doc_ids {row['doc_ids']} but cites {cited}")
    assert problems == []


def test_no_claim_copies_its_sentence() -> None:
    # A paraphrase that repeats its sentence would test retrieval, not the judge.
    def norm(text: str) -> str:
        return " ".join(text.lower().rstrip(".").split())

    copies = [row["claim_id"] for row in ROWS
              if any(norm(row["claim"]) == norm(ev["evidence"]) for ev in row["evidences"])]
    assert copies == []


def test_every_claim_is_within_the_engine_limits() -> None:
    for row in ROWS:
        check_claim(row["claim"])  # raises INPUT_TOO_LARGE / BAD_INPUT as a session would
        assert 0 < len(subclaims(row["claim"])) <= MAX_SUBCLAIMS, row["claim_id"]


# -- through the eval tools ------------------------------------------------------------------


def test_the_file_reads_as_an_eval_dataset() -> None:
    data = read_dataset(TRAPS)
    assert [c.id for c in data.claims] == [row["claim_id"] for row in ROWS]
    assert [c.claim for c in data.claims] == [row["claim"] for row in ROWS]
    assert [g.label for g in data.gold] == [row["claim_label"] for row in ROWS]
    assert [len(g.evidences) for g in data.gold] == [len(row["evidences"]) for row in ROWS]


def test_the_eval_corpus_is_the_demo_corpus_sentence_by_sentence() -> None:
    # corpus.jsonl exists because `claimfsm eval` reads {"id", "article", "text"} lines;
    # it must never drift from the demo corpus the engine test above runs on.
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    assert {r["id"]: (r["article"], r["text"]) for r in rows} == SENTENCES
    assert len(rows) == len(SENTENCES)


def test_claimfsm_eval_scores_the_suite_per_class() -> None:
    # A slice keeps this quick; the whole file runs the same way (README.md).
    result = CliRunner().invoke(main, ["eval", str(TRAPS), "--corpus", str(CORPUS),
                                       "--limit", "40", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["claims"] == 40
    per_class = report["verdict"]["per_class"]
    assert {"SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO"} <= set(per_class)
    assert sum(sum(row.values()) for row in report["verdict"]["confusion"].values()) == 40
