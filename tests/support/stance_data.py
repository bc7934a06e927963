"""A small labelled dataset in the Climate-FEVER format, written for the learned-judge tests.

Each claim says that some quantity of a subject rises; a SUPPORTS sentence says it rises
too, a REFUTES sentence says it falls or denies it, a NOT_ENOUGH_INFO sentence is about
something else. The claim label follows the dataset's rule over its sentences.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy and the training code load only for the tests that train
    from claimfsm.eval.train.report import TrainReport

__all__ = ["SUBJECTS", "train_small", "write_corpus", "write_dataset"]

SUBJECTS: tuple[tuple[str, str], ...] = (
    ("Arctic", "sea ice melt"), ("Greenland", "glacier retreat"), ("Pacific", "ocean heat"),
    ("Sahara", "desert dust"), ("Amazon", "forest fires"), ("Alps", "snow line"),
    ("Siberia", "permafrost thaw"), ("Antarctica", "ice shelf loss"),
    ("Bengal", "cyclone damage"), ("Andes", "glacier melt"), ("Baltic", "water warming"),
    ("Kenya", "drought severity"), ("Texas", "heat waves"), ("Iceland", "volcanic ash"),
    ("Norway", "winter rain"), ("Chile", "wildfire smoke"),
)

_FILLER = (
    "The museum opened a new gallery of Roman coins last spring.",
    "The football club signed a young striker from Brazil.",
    "A new bridge across the river was finished by the city council.",
)


def _claim(n: int, place: str, thing: str) -> dict[str, object]:
    claim = f"The {thing} in {place} has increased sharply since 1990."
    sup = f"Since 1990 the {thing} in {place} has increased sharply, records show."
    ref = f"The {thing} in {place} has not increased; it decreased steadily since 1990."
    kind = n % 4
    sentences: list[tuple[str, str]] = [("NOT_ENOUGH_INFO", _FILLER[n % 3]),
                                        ("NOT_ENOUGH_INFO", _FILLER[(n + 1) % 3])]
    if kind in (0, 3):
        sentences.append(("SUPPORTS", sup))
    if kind in (1, 3):
        sentences.append(("REFUTES", ref))
    label = {0: "SUPPORTS", 1: "REFUTES", 2: "NOT_ENOUGH_INFO", 3: "DISPUTED"}[kind]
    evidences = [{"evidence_id": f"{place}:{i}", "evidence_label": lab, "article": place,
                  "evidence": text, "entropy": 0.0, "votes": [lab]}
                 for i, (lab, text) in enumerate(sentences)]
    return {"claim_id": str(n), "claim": claim, "claim_label": label, "evidences": evidences}


def write_dataset(path: Path, n: int = len(SUBJECTS)) -> Path:
    """Write ``n`` claims (at most ``len(SUBJECTS)``) to ``path`` and return it."""
    lines = [json.dumps(_claim(i, *SUBJECTS[i])) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_corpus(dataset: Path, path: Path) -> Path:
    """Every evidence sentence of ``dataset`` as a corpus line (``{"id", "article", "text"}``)."""
    rows = {}
    for line in dataset.read_text(encoding="utf-8").splitlines():
        for e in json.loads(line)["evidences"]:
            rows[e["evidence_id"]] = {"id": e["evidence_id"], "article": e["article"],
                                      "text": e["evidence"]}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows.values()), encoding="utf-8")
    return path


def train_small(root: Path) -> tuple[Path, Path, Path, TrainReport]:
    """Train a model on this dataset in ``root`` the way ``claimfsm train --corpus`` does,
    with a verdict head over 32-dimension hashing embeddings (and so the reranker), 4
    folds. Returns the model file, the dataset, the corpus and the training report.
    """
    from claimfsm.eval.data import read_dataset
    from claimfsm.eval.train.head import HeadSpec
    from claimfsm.eval.train.judge import train
    from claimfsm.eval.train.retrieved import retrieve_for_training
    from claimfsm.skills.embed import HashingEmbedder

    ds = write_dataset(root / "d.jsonl")
    corpus = write_corpus(ds, root / "c.jsonl")
    data = read_dataset(ds)
    rep = train(data, root / "m.npz", folds=4, retrieved=retrieve_for_training(data, corpus),
                head=HeadSpec(embedder=HashingEmbedder(dim=32), embedder_name="hashing-32"))
    return root / "m.npz", ds, corpus, rep
