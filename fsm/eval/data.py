"""Reading an evaluation dataset in the Climate-FEVER format, split in two on purpose.

Each line is ``{"claim_id", "claim", "claim_label", "evidences": [{"evidence_id",
"evidence_label", "evidence", ...}, ...]}``. :func:`read_dataset` returns a
:class:`Dataset` whose :attr:`Dataset.claims` hold only what the engine may see (id and
text) and whose :attr:`Dataset.gold` holds the labels and evidence, which only the
scorer reads. A malformed line is a :class:`DatasetError` naming the line and the field,
never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import orjson

from claimfsm._base.models import Frozen
from claimfsm.engine.errors import ClaimFsmError, ErrorCode

__all__ = [
    "CLAIM_LABELS",
    "EVIDENCE_LABELS",
    "ClaimLabel",
    "Dataset",
    "DatasetError",
    "EvalClaim",
    "EvidenceLabel",
    "GoldClaim",
    "GoldEvidence",
    "read_dataset",
]

ClaimLabel = Literal["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED"]
EvidenceLabel = Literal["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO"]
CLAIM_LABELS: tuple[ClaimLabel, ...] = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO", "DISPUTED")
EVIDENCE_LABELS: tuple[EvidenceLabel, ...] = ("SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO")


class EvalClaim(Frozen):
    """What the engine is given for one claim: its id and its text, nothing else."""

    id: str
    claim: str


class GoldEvidence(Frozen):
    """One annotated evidence sentence (``evidence_id`` is ``"Article:index"``)."""

    evidence_id: str
    label: EvidenceLabel
    text: str


class GoldClaim(Frozen):
    """A claim's gold label and its annotated evidence sentences (scorer only)."""

    id: str
    label: ClaimLabel
    evidences: tuple[GoldEvidence, ...]

    @property
    def decisive(self) -> frozenset[str]:
        """Evidence ids labelled SUPPORTS or REFUTES: what retrieval must find."""
        return frozenset(e.evidence_id for e in self.evidences if e.label != "NOT_ENOUGH_INFO")

    def with_label(self, label: str) -> frozenset[str]:
        """Evidence ids whose label is ``label``."""
        return frozenset(e.evidence_id for e in self.evidences if e.label == label)


class Dataset(Frozen):
    """Claims for the engine and gold for the scorer, in file order, joined by id."""

    claims: tuple[EvalClaim, ...]
    gold: tuple[GoldClaim, ...]


class DatasetError(ClaimFsmError):
    """A dataset that cannot be read (``NOT_FOUND``, ``BAD_DATASET``, ``EMPTY_DATASET``);
    ``msg`` names the line and the field."""

    code = ErrorCode.BAD_DATASET

    def __init__(self, code: ErrorCode | str, msg: str) -> None:
        super().__init__(msg, code=code, field="dataset")


def _field(n: int, obj: dict[str, Any], name: str, where: str = "") -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        what = "missing" if name not in obj else "not a non-empty string"
        raise DatasetError("BAD_DATASET", f"line {n}: field '{where}{name}' is {what}")
    return value


def _label(n: int, value: str, allowed: tuple[str, ...], name: str) -> Any:
    if value not in allowed:
        raise DatasetError(
            "BAD_DATASET",
            f"line {n}: field '{name}': {value!r} is not one of {', '.join(allowed)}",
        )
    return value


def _evidence(n: int, i: int, raw: Any) -> GoldEvidence:
    where = f"evidences.{i}."
    if not isinstance(raw, dict):
        raise DatasetError("BAD_DATASET", f"line {n}: field 'evidences.{i}' is not an object")
    label = _label(n, _field(n, raw, "evidence_label", where), EVIDENCE_LABELS,
                   where + "evidence_label")
    return GoldEvidence(evidence_id=_field(n, raw, "evidence_id", where), label=label,
                        text=_field(n, raw, "evidence", where))


def _parse(n: int, raw: bytes) -> tuple[EvalClaim, GoldClaim]:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DatasetError("BAD_DATASET", f"line {n}: malformed JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DatasetError("BAD_DATASET", f"line {n}: expected a JSON object")
    cid = _field(n, obj, "claim_id")
    text = _field(n, obj, "claim")
    label = _label(n, _field(n, obj, "claim_label"), CLAIM_LABELS, "claim_label")
    evs = obj.get("evidences")
    if not isinstance(evs, list):
        raise DatasetError("BAD_DATASET", f"line {n}: field 'evidences' is not a list")
    gold = GoldClaim(id=cid, label=label,
                     evidences=tuple(_evidence(n, i, e) for i, e in enumerate(evs)))
    return EvalClaim(id=cid, claim=text), gold


def read_dataset(path: str | Path, *, limit: int | None = None) -> Dataset:
    """The first ``limit`` claims (all if ``None``) of a Climate-FEVER JSONL file.

    Raises :class:`DatasetError`: ``NOT_FOUND`` (unreadable file), ``BAD_DATASET`` (a
    malformed line, or a claim id seen twice), ``EMPTY_DATASET`` (no claims).
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as exc:
        raise DatasetError("NOT_FOUND", f"dataset: cannot read {path}: "
                           f"{exc.strerror or exc}") from None
    claims: list[EvalClaim] = []
    gold: list[GoldClaim] = []
    seen: set[str] = set()
    with handle:
        for n, raw in enumerate(handle, start=1):
            if limit is not None and len(claims) >= limit:
                break
            if not raw.strip():
                continue
            claim, g = _parse(n, raw)
            if claim.id in seen:
                raise DatasetError("BAD_DATASET",
                                   f"line {n}: field 'claim_id': {claim.id!r} seen twice")
            seen.add(claim.id)
            claims.append(claim)
            gold.append(g)
    if not claims:
        raise DatasetError("EMPTY_DATASET", f"dataset: no claims in {path}")
    return Dataset(claims=tuple(claims), gold=tuple(gold))
