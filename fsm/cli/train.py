"""``claimfsm train``: fit the learned stance model on a labelled dataset (see docs/judge.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from claimfsm.cli.common import emit, fail, json_option
from claimfsm.engine.errors import ClaimFsmError
from claimfsm.eval.data import DatasetError, read_dataset

__all__ = ["render", "train_command"]


def render(rep: object) -> list[str]:
    """The training report for people."""
    from claimfsm.eval.train.judge import TrainReport

    assert isinstance(rep, TrainReport)
    s, v = rep.cv_stance, rep.cv_verdict
    per = "  ".join(f"{k[:3]} {x:.3f}" for k, x in v.per_class.items())
    lines = [
        f"trained on {rep.claims} claims, {rep.pairs} (claim, sentence) pairs, "
        f"{rep.features} features" + (f" (embedder {rep.embedder})" if rep.embedder else ""),
        f"{rep.folds}-fold cross-validation by claim, grouped (held-out claims only):",
        f"  stance:  accuracy {s.accuracy:.3f}  macro-F1 {s.macro_f1:.3f}",
        f"  verdict (annotated evidence): accuracy {v.accuracy:.3f}  macro-F1 "
        f"{v.macro_f1:.3f}  ({per})",
        "  thresholds per fold (support, refute): "
        + ", ".join(f"({a}, {b})" for a, b in rep.fold_thresholds),
        f"model: {rep.out}  (support p >= {rep.support_t}, refute p >= {rep.refute_t}, "
        f"judges the first {rep.top} sentences per subclaim)",
    ]
    r = rep.cv_verdict_retrieved
    if r is not None:
        per_r = "  ".join(f"{k[:3]} {x:.3f}" for k, x in r.per_class.items())
        lines.insert(4, f"  verdict (engine's retrieved evidence): accuracy {r.accuracy:.3f}  "
                        f"macro-F1 {r.macro_f1:.3f}  ({per_r})")
    h = rep.cv_verdict_head
    if h is not None:
        per_h = "  ".join(f"{k[:3]} {x:.3f}" for k, x in h.per_class.items())
        lines.insert(5, f"  verdict (claim-level head, retrieved evidence): accuracy "
                        f"{h.accuracy:.3f}  macro-F1 {h.macro_f1:.3f}  ({per_h})")
        lines.insert(6, "  head (l2, alpha) per fold: "
                        + ", ".join(f"({a:g}, {b:g})" for a, b in rep.head_params))
    if rep.head is not None:
        lines.append(f"verdict head: l2 {rep.head[0]:g}, prior exponent {rep.head[1]:g}"
                     + (f", embedder {rep.head_embedder}" if rep.head_embedder else ""))
    if rep.alignment:
        lines.append("alignment features, weight for SUPPORTS / REFUTES / NOT_ENOUGH_INFO: "
                     + "; ".join(f"{k[6:]} " + " / ".join(f"{w:+.2f}" for w in v)
                                 for k, v in rep.alignment.items()))
    if rep.cv_rerank is not None:
        b, a = rep.cv_rerank
        lines.append(f"evidence reranker (CV, held-out claims): recall@5 {b.recall_at_5:.3f} -> "
                     f"{a.recall_at_5:.3f}, hit@5 {b.hit_at_5:.3f} -> {a.hit_at_5:.3f}")
    return lines


@click.command("train")
@click.argument("dataset", metavar="DATASET.jsonl",
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out", required=True, metavar="MODEL.npz",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the model file.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Cross-validation folds (by claim).")
@click.option("--embedder", default=None, metavar="NAME",
              help="Add dense features from claimfsm.skills.embed (e.g. minilm); lexical only if "
              "not given.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Train on the first N claims only.")
@click.option("--corpus", "corpus", default=None, metavar="CORPUS.jsonl",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Evidence pool: choose the thresholds on the engine's own retrieved "
              "evidence (cross-validated) instead of the annotated sentences.")
@click.option("--head/--no-head", "head", default=True, show_default=True,
              help="With --corpus, also train the claim-level verdict head (stacked on the "
              "stance model's out-of-fold probabilities over the retrieved evidence).")
@click.option("--head-embedder", "head_embedder", default=None, metavar="NAME",
              help="Give the verdict head the claim's embedding and its similarities to "
              "the evidence (e.g. minilm, hashing-256); lexical and stance features only "
              "if not given.")
@click.option("--semantic/--no-semantic", "semantic", default=None,
              help="Retrieve the training evidence with hybrid BM25 + MiniLM ranking, as "
              "`claimfsm eval` does (default: when the semantic extra is installed).")
@json_option
def train_command(dataset: Path, out: Path, folds: int, embedder: str | None,
                  limit: int | None, corpus: Path | None, head: bool,
                  head_embedder: str | None, semantic: bool | None, as_json: bool) -> None:
    """Fit the learned stance model on DATASET.jsonl (Climate-FEVER format), report
    cross-validated stance and verdict figures, and write MODEL.npz."""
    try:
        data = read_dataset(dataset, limit=limit)
    except DatasetError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
        return  # unreachable: fail exits
    if len(data.claims) < folds:
        fail("TOO_FEW_CLAIMS", f"dataset: {len(data.claims)} claims for {folds} folds",
             as_json=as_json)
    if corpus is not None and not corpus.is_file():
        fail("NOT_FOUND", f"corpus: no file {corpus}", as_json=as_json)
    if not out.parent.is_dir():
        fail("NOT_FOUND", f"out: no directory {out.parent}", as_json=as_json)
    try:
        from claimfsm.eval.train.judge import check_learnable, train
        from claimfsm.eval.train.retrieved import retrieve_for_training
        from claimfsm.skills.stance.model import Featurizer, resolve_embedder
    except ImportError as exc:
        fail("MISSING_DEPENDENCY", f"train needs numpy ({exc.name} is not installed)",
             as_json=as_json)
        return  # unreachable: fail exits
    try:
        check_learnable(data, folds)  # before the retrieval, which takes a while
    except ClaimFsmError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
    emb = hemb = None
    for opt, name in (("embedder", embedder), ("head-embedder", head_embedder)):
        if name is not None:
            got = resolve_embedder(name)
            if got is None:
                fail("EMBEDDER_UNAVAILABLE", f"{opt}: '{name}' cannot be loaded here",
                     as_json=as_json)
            emb, hemb = (got, hemb) if opt == "embedder" else (emb, got)
    from claimfsm.eval.train.head import HeadSpec
    from claimfsm.skills.embed import load_embedder

    retr_emb = load_embedder("minilm") if corpus is not None and semantic is not False else None
    if semantic and retr_emb is None:
        fail("EMBEDDER_UNAVAILABLE", "semantic: the semantic extra is not installed",
             as_json=as_json)

    def progress(done: int, total: int) -> None:
        if not as_json and sys.stderr.isatty():
            click.echo(f"fold {done}/{total}", err=True)

    retrieved = (None if corpus is None
                 else retrieve_for_training(data, corpus, embedder=retr_emb))
    spec = HeadSpec(embedder=hemb, embedder_name=head_embedder) if head else None
    try:
        report = train(data, out, folds=folds, featurizer=Featurizer(emb), embedder=embedder,
                       retrieved=retrieved, on_fold=progress, head=spec)
    except ClaimFsmError as exc:  # a fit that came out non-finite: nothing was written
        fail(exc.code, exc.msg, as_json=as_json)
        return  # unreachable: fail exits
    if as_json:
        emit(report.model_dump(mode="json"))
    else:
        click.echo("\n".join(render(report)))
