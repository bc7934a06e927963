"""``claimfsm eval`` end to end on a small dataset written for these tests (tests/data/).

Also checks that the engine never sees a label: sessions get only the claim text, and
a dataset whose labels are all changed gives exactly the same engine output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from claimfsm.cli.main import main
from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import Driver, StepResult
from claimfsm.engine.runtime import Engine
from claimfsm.eval.data import DatasetError, read_dataset
from claimfsm.eval.run import (
    EVAL_CONFIG,
    evaluate,
    judge_sentences,
    open_engine,
    ranked_documents,
    run_claim,
)
from claimfsm.skills.stance.align import CHECKS
from claimfsm.skills.tools.ingest import ingest_corpus

DATA = Path(__file__).resolve().parents[1] / "data"
DATASET = DATA / "eval_dataset.jsonl"
CORPUS = DATA / "eval_corpus.jsonl"


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["eval", *args], catch_exceptions=False)


@pytest.fixture
def engine() -> Iterator[Engine]:
    eng, report = open_engine(CORPUS)
    assert report.added == 13 and not report.errors
    yield eng
    eng.close()


def relabelled(tmp_path: Path) -> Path:
    """The test dataset with every claim and evidence label rotated to another one."""
    turn = {"SUPPORTS": "REFUTES", "REFUTES": "NOT_ENOUGH_INFO",
            "NOT_ENOUGH_INFO": "DISPUTED", "DISPUTED": "SUPPORTS"}
    eturn = {"SUPPORTS": "REFUTES", "REFUTES": "NOT_ENOUGH_INFO",
             "NOT_ENOUGH_INFO": "SUPPORTS"}
    out = tmp_path / "relabelled.jsonl"
    lines = []
    for raw in DATASET.read_text().splitlines():
        row = json.loads(raw)
        row["claim_label"] = turn[row["claim_label"]]
        for e in row["evidences"]:
            e["evidence_label"] = eturn[e["evidence_label"]]
            e["votes"] = [eturn[v] if v else None for v in e["votes"]]
        lines.append(json.dumps(row))
    out.write_text("\n".join(lines) + "\n")
    return out


# -- the JSON report ----------------------------------------------------------------------


def test_json_report_has_exactly_the_issue_keys() -> None:
    res = cli(str(DATASET), "--corpus", str(CORPUS), "--json")
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.output)
    assert list(body) == ["claims", "retrieval", "stance", "verdict", "verdict_gold", "strict",
                          "claims_per_s", "checks", "split"]
    assert body["claims"] == 6
    assert list(body["retrieval"]) == ["recall@5", "recall@10", "recall@20", "hit@5"]
    assert list(body["stance"]) == ["accuracy", "macro_f1"]
    for key in ("verdict", "verdict_gold"):
        assert list(body[key]) == ["accuracy", "macro_f1", "per_class", "precision", "recall",
                                   "confusion"]
        assert list(body[key]["per_class"]) == ["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO",
                                                "DISPUTED"]
        conf = body[key]["confusion"]
        assert sum(sum(row.values()) for row in conf.values()) == 6
        for lab in body[key]["per_class"]:
            # Precision and recall follow from the confusion matrix, per class.
            tp = conf[lab][lab]
            predicted = sum(row[lab] for row in conf.values())
            gold = sum(conf[lab].values())
            assert body[key]["precision"][lab] == round(tp / predicted if predicted else 0, 4)
            assert body[key]["recall"][lab] == round(tp / gold if gold else 0, 4)
    assert set(body["checks"]) == set(CHECKS)
    assert 0.0 <= body["strict"] <= body["verdict"]["accuracy"]
    assert body["claims_per_s"] > 0


def test_json_split_counts_every_step_and_tool_call_by_state() -> None:
    body = orjson.loads(cli(str(DATASET), "--corpus", str(CORPUS), "--json").output)
    split = body["split"]
    states = split["states"]
    assert list(states) == ["PARSE_CLAIM", "RETRIEVAL", "EXTRACT", "VERIFY", "AGGREGATE"]
    assert states["PARSE_CLAIM"] == {**states["PARSE_CLAIM"], "skill": "parse_claim",
                                     "steps": 6}
    assert states["AGGREGATE"]["skill"] == "verdict_aggregate"
    assert states["AGGREGATE"]["steps"] == 6  # every claim finishes
    for row in states.values():
        assert row["ms_per_claim"] > 0 and row["cpu_ms_per_claim"] >= 0
    tools = split["tools"]
    assert {"web_search", "page_fetch", "sentence_extract"} <= set(tools)
    assert tools["page_fetch"]["calls"] == tools["sentence_extract"]["calls"] > 0
    # A step's ready calls run at the same time (docs/retrieval.md), so the tools' times
    # may add up to more than the steps' wall time; each tool's is at most all steps'
    # wall time times the calls a step may run at once.
    walls = sum(s["ms_per_claim"] for s in states.values())
    assert all(0 <= t["ms_per_claim"] <= walls * 32 for t in tools.values())
    assert set(split["outside_steps"]) == {"ms_per_claim", "cpu_ms_per_claim"}


def test_timing_leaves_the_driver_as_it_was(engine: Engine) -> None:
    before = engine.driver.observer
    rep = evaluate(engine, read_dataset(DATASET, limit=2))
    assert engine.driver.observer is before
    assert rep.split.states["PARSE_CLAIM"].steps == 2


def test_retrieval_finds_the_gold_sentences_of_the_small_corpus() -> None:
    body = orjson.loads(cli(str(DATASET), "--corpus", str(CORPUS), "--json").output)
    # Every claim but the NOT_ENOUGH_INFO one has gold evidence; each is easy to find.
    assert body["retrieval"]["hit@5"] == 1.0
    assert body["retrieval"]["recall@20"] == 1.0


def test_limit_takes_the_first_claims() -> None:
    body = orjson.loads(cli(str(DATASET), "--corpus", str(CORPUS), "--json",
                            "--limit", "2").output)
    assert body["claims"] == 2
    matrix = body["verdict"]["confusion"]
    assert sum(matrix["SUPPORTS"].values()) == 2  # the first two claims are SUPPORTS


def test_human_report_names_every_figure() -> None:
    res = cli(str(DATASET), "--corpus", str(CORPUS))
    assert res.exit_code == 0
    for needle in ("recall@5", "hit@5", "stance", "verdict (retrieved evidence)",
                   "verdict (gold evidence given)", "strict", "claims/s"):
        assert needle in res.output


# -- errors are data ----------------------------------------------------------------------


def test_missing_files_are_clean_errors(tmp_path: Path) -> None:
    res = cli(str(tmp_path / "none.jsonl"), "--corpus", str(CORPUS))
    assert res.exit_code != 0 and "error: NOT_FOUND: dataset" in res.output
    res = cli(str(DATASET), "--corpus", str(tmp_path / "none.jsonl"))
    assert res.exit_code != 0 and "error: NOT_FOUND: corpus" in res.output


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("not json", "line 2: malformed JSON"),
        ('{"claim_id": "9", "claim": "x", "claim_label": "TRUE", "evidences": []}',
         "line 2: field 'claim_label'"),
        ('{"claim_id": "9", "claim_label": "SUPPORTS", "evidences": []}',
         "line 2: field 'claim' is missing"),
        ('{"claim_id": "9", "claim": "x", "claim_label": "SUPPORTS", "evidences": [{}]}',
         "line 2: field 'evidences.0.evidence_label' is missing"),
        ('{"claim_id": "1", "claim": "x", "claim_label": "SUPPORTS", "evidences": []}',
         "line 2: field 'claim_id': '1' seen twice"),
    ],
)
def test_a_bad_dataset_line_names_line_and_field(tmp_path: Path, line: str, needle: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(DATASET.read_text().splitlines()[0] + "\n" + line + "\n")
    res = cli(str(bad), "--corpus", str(CORPUS), "--json")
    assert res.exit_code != 0
    err = orjson.loads(res.output)["error"]
    assert err["code"] == "BAD_DATASET" and needle in err["msg"]


def test_empty_dataset_and_empty_corpus(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetError) as info:
        read_dataset(empty)
    assert info.value.code == "EMPTY_DATASET"
    res = cli(str(DATASET), "--corpus", str(empty))
    assert res.exit_code != 0 and "error: EMPTY_CORPUS" in res.output


# -- the engine never sees a label ---------------------------------------------------------


def test_sessions_receive_only_the_claim_text(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    real = Driver.start

    def spy(self: Driver, claim: str, **kw: Any) -> Any:
        seen.append((claim, dict(kw.get("config") or {})))
        return real(self, claim, **kw)

    monkeypatch.setattr(Driver, "start", spy)
    data = read_dataset(DATASET)
    evaluate(engine, data)
    assert [c for c, _ in seen] == [c.claim for c in data.claims]
    assert all(cfg == dict(EVAL_CONFIG) for _, cfg in seen)
    blob = json.dumps([cfg for _, cfg in seen])
    assert "SUPPORTS" not in blob and "evidence" not in blob


def test_changing_every_label_changes_no_engine_output(tmp_path: Path) -> None:
    outputs = []
    for path in (DATASET, relabelled(tmp_path)):
        eng, _ = open_engine(CORPUS)
        with eng:
            data = read_dataset(path)
            runs = [run_claim(eng, c) for c in data.claims]
            judged = [judge_sentences(g.id, c.claim, [(e.evidence_id, e.text)
                                                      for e in g.evidences])
                      for c, g in zip(data.claims, data.gold, strict=True)]
        outputs.append((runs, judged))
    assert outputs[0] == outputs[1]
    assert read_dataset(DATASET).gold != read_dataset(relabelled(tmp_path)).gold


# -- pieces --------------------------------------------------------------------------------


def test_every_claim_runs_a_full_session(engine: Engine) -> None:
    data = read_dataset(DATASET)
    for claim in data.claims:
        run = run_claim(engine, claim)
        assert run.finished and run.error is None
    states = [r.fsm for sid in engine.store.sessions() for r in engine.store.history(sid)]
    for fsm in ("PARSE_CLAIM", "RETRIEVAL", "EXTRACT", "VERIFY", "AGGREGATE", "DONE"):
        assert fsm in states


def test_ranked_documents_merge_subclaims_by_score() -> None:
    evidence = {
        "s1": [{"id": "A:1#0", "score": 0.5}, {"id": "B:2#0", "score": 0.2}],
        "s2": [{"id": "C:3#0", "score": 0.9}, {"id": "A:1#0", "score": 0.1}],
    }
    assert ranked_documents(evidence) == ("C:3", "A:1", "B:2")


def test_progress_and_throughput_use_the_injected_timer(engine: Engine) -> None:
    data = read_dataset(DATASET, limit=3)
    ticks = iter([10.0, 12.0])
    progress: list[tuple[int, int]] = []
    rep = evaluate(engine, data, on_claim=lambda n, t: progress.append((n, t)),
                   timer=lambda: next(ticks))
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert rep.claims_per_s == 1.5 and rep.seconds == 2.0


def test_gold_judging_uses_the_sentences_it_is_given() -> None:
    claim = "Mountain glaciers have retreated since 1900."
    glacier = ("Glacier:0", "Most mountain glaciers have retreated since 1900 as air "
               "temperatures increased.")
    penguin = ("Penguin:3", "Emperor penguins breed on sea ice during the Antarctic winter.")
    run = judge_sentences("1", claim, [glacier, penguin])
    assert run.stances == {"Glacier:0": "SUPPORTS", "Penguin:3": "NOT_ENOUGH_INFO"}
    assert run.label == "SUPPORTS"
    assert judge_sentences("1", claim, [penguin]).label == "NOT_ENOUGH_INFO"


def test_session_config_reaches_extract_and_the_judge() -> None:
    seen: list[StepResult] = []
    eng = Engine.open(None, config=EngineConfig(seed=False, on_step=seen.append))
    with eng:
        ingest_corpus(eng.index, CORPUS)
        config = {"per_claim": 1, "docs_per_claim": 7, "min_best": 0.25, "judge": "calibrated"}
        head = eng.driver.run(eng.driver.start("Sea level rise has accelerated.",
                                               config=config).sid)
    inputs = {r.skill: r.input for r in seen if r.skill}
    extract = inputs["evidence_extract"]
    assert (extract["per_claim"], extract["docs_per_claim"], extract["min_best"]) == (1, 7, 0.25)
    assert inputs["stance_judge"]["profile"] == "calibrated"
    assert inputs["verdict_aggregate"]["profile"] == "calibrated"
    assert all(len(items) <= 1 for items in head.state.evidence.values())
