"""Reading an evaluation dataset in the Climate-FEVER format, split in two on purpose.

Each line is ``{"claim_id", "claim", "claim_label", "evidences": [{"evidence_id",
"evidence_label", "evidence", ...}, ...]}``. :func:`read_dataset` returns a
:class:`Dataset` whose :attr:`Dataset.claims` hold only what the engine may see (id and
text) and whose :attr:`Dataset.gold` holds the labels and evidence, which only the
scorer reads. A malformed line is a :class:`DatasetError` naming the line and the field,
never a traceback.

A dataset is held in memory (the scorer and ``train`` need all of it), so the file is
bounded: :data:`MAX_DATASET_LINE_BYTES` per line, :data:`MAX_DATASET_CLAIMS` claims,
:data:`MAX_DATASET_BYTES` in all; and each claim within what a session accepts (the
claim's length, its evidence sentences' number and length), so every claim it holds can
run: an over-limit one is ``INPUT_TOO_LARGE`` naming its line and field, before anything
runs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import orjson

from claimfsm._base.models import Frozen
from claimfsm.engine.errors import ClaimFsmError, ErrorCode, check_claim
from claimfsm.skills.limits import MAX_EVIDENCE_PER_CLAIM, MAX_SENTENCE_CHARS
from claimfsm.skills.tools.bounded import Bounds, OverLimit, read_lines

__all__ = [
    "CLAIM_LABELS",
    "EVIDENCE_LABELS",
    "MAX_DATASET_BYTES",
    "MAX_DATASET_CLAIMS",
    "MAX_DATASET_LINE_BYTES",
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

MAX_DATASET_LINE_BYTES = 1024 * 1024
"""One line of a dataset: a claim and up to ``MAX_EVIDENCE_PER_CLAIM`` evidence sentences
(Climate-FEVER's longest is 4 KB)."""

MAX_DATASET_CLAIMS = 200_000
"""Claims of one dataset (Climate-FEVER has 1,535; FEVER's training set 145,449)."""

MAX_DATASET_BYTES = 512 * 1024 * 1024
"""Bytes of one dataset file."""

_BOUNDS = Bounds(line=MAX_DATASET_LINE_BYTES, size=MAX_DATASET_BYTES)


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
    text = _field(n, raw, "evidence", where)
    if len(text) > MAX_SENTENCE_CHARS:
        raise DatasetError("INPUT_TOO_LARGE", f"line {n}: field '{where}evidence': "
                           f"{len(text)} characters, the limit is {MAX_SENTENCE_CHARS}")
    return GoldEvidence(evidence_id=_field(n, raw, "evidence_id", where), label=label,
                        text=text)


def _parse(n: int, raw: bytes) -> tuple[EvalClaim, GoldClaim]:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DatasetError("BAD_DATASET", f"line {n}: malformed JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DatasetError("BAD_DATASET", f"line {n}: expected a JSON object")
    cid = _field(n, obj, "claim_id")
    text = _field(n, obj, "claim")
    try:
        check_claim(text)  # what a session would refuse, refused before any runs
    except ClaimFsmError as exc:
        raise DatasetError(exc.code, f"line {n}: field 'claim': "
                           f"{exc.msg.removeprefix('claim: ')}") from None
    label = _label(n, _field(n, obj, "claim_label"), CLAIM_LABELS, "claim_label")
    evs = obj.get("evidences")
    if not isinstance(evs, list):
        raise DatasetError("BAD_DATASET", f"line {n}: field 'evidences' is not a list")
    if len(evs) > MAX_EVIDENCE_PER_CLAIM:
        raise DatasetError("INPUT_TOO_LARGE", f"line {n}: field 'evidences': {len(evs)} "
                           f"sentences, the limit is {MAX_EVIDENCE_PER_CLAIM}")
    gold = GoldClaim(id=cid, label=label,
                     evidences=tuple(_evidence(n, i, e) for i, e in enumerate(evs)))
    return EvalClaim(id=cid, claim=text), gold


def read_dataset(path: str | Path, *, limit: int | None = None) -> Dataset:
    """The first ``limit`` claims (all if ``None``) of a Climate-FEVER JSONL file.

    Raises :class:`DatasetError`: ``NOT_FOUND`` (unreadable file), ``BAD_DATASET`` (a
    malformed line, or a claim id seen twice), ``INPUT_TOO_LARGE`` (a line, the file or
    a claim over its limit), ``EMPTY_DATASET`` (no claims).
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise DatasetError("NOT_FOUND", f"dataset: cannot read {path}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from None
    claims: list[EvalClaim] = []
    gold: list[GoldClaim] = []
    seen: set[str] = set()
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_DATASET_BYTES:  # a regular file says so up front; a pipe is counted
            raise DatasetError("INPUT_TOO_LARGE", f"dataset: {size} bytes, the limit is "
                               f"{MAX_DATASET_BYTES}")
        try:
            for n, _, raw in read_lines(handle, _BOUNDS):
                if limit is not None and len(claims) >= limit:
                    break
                if not raw.strip():
                    continue
                if len(claims) >= MAX_DATASET_CLAIMS:
                    raise DatasetError("INPUT_TOO_LARGE", f"dataset: more than "
                                       f"{MAX_DATASET_CLAIMS} claims (line {n}); use --limit")
                claim, g = _parse(n, raw)
                if claim.id in seen:
                    raise DatasetError("BAD_DATASET",
                                       f"line {n}: field 'claim_id': {claim.id!r} seen twice")
                seen.add(claim.id)
                claims.append(claim)
                gold.append(g)
        except OverLimit as exc:
            raise DatasetError("INPUT_TOO_LARGE", f"dataset: {exc.msg}") from None
        except OSError as exc:
            raise DatasetError("NOT_FOUND", f"dataset: cannot read {path}: "
                               f"{exc.strerror or exc}") from None
    if not claims:
        raise DatasetError("EMPTY_DATASET", f"dataset: no claims in {path}")
    return Dataset(claims=tuple(claims), gold=tuple(gold))
