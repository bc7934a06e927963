"""The learned stance model: a multinomial logistic regression over (claim, sentence) pairs.

Optional and explainable. ``claimfsm train`` (:mod:`claimfsm.eval.train.judge`) fits it on a
labelled dataset the user points to and writes one ``.npz`` file; a session uses it when its
config names the file (``stance_model``). Without a model file the lexical judge
(:mod:`claimfsm.skills.stance.lexical`) runs, exactly as before. numpy is needed only here, and this
module is imported only when a model is used.

A sentence is a *clear* SUPPORTS when ``p(SUPPORTS) >= support_t``, a clear REFUTES when
``p(REFUTES) >= refute_t`` (the thresholds are chosen by cross-validation at training
time), and NOT_ENOUGH_INFO otherwise; every reason names the probability and the features
that pushed the prediction most. A model trained with an embedder records its name; when
that embedder cannot be loaded, :func:`cached_model` says so and the caller falls back
to the lexical judge.
"""

from __future__ import annotations

import functools
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from claimfsm._base.errors import ClaimFsmError, ErrorCode
from claimfsm.skills.stance.lexical import LABELS, Label
from claimfsm.skills.stance.model_features import LEXICAL_FEATURES, lexical_features
from claimfsm.skills.stance.rerank import Reranker, read_reranker, reranker_arrays
from claimfsm.skills.stance.verdict_head import VerdictHead

__all__ = [
    "FORMAT",
    "MAX_MODEL_BYTES",
    "Embedder",
    "Featurizer",
    "ModelError",
    "StanceModel",
    "cached_model",
    "dense_features",
    "load_model",
    "non_finite",
    "resolve_embedder",
]

FORMAT = "claimfsm-stance-model/1"
"""The model file's format tag; a file with another tag is refused."""

MAX_MODEL_BYTES = 512 * 1024 * 1024
"""A model file, and the arrays it unpacks to (a model with a verdict head's bank of
Climate-FEVER claim embeddings is about 5 MB)."""

Array = npt.NDArray[np.float64]


class ModelError(ClaimFsmError):
    """A model file that cannot be used (``MODEL_NOT_FOUND``, ``BAD_MODEL``): ``msg``
    names the problem, ``str()`` is ``CODE: msg``."""

    code = ErrorCode.BAD_MODEL

    def __init__(self, code: ErrorCode | str, msg: str) -> None:
        super().__init__(msg, code=code, field="stance_model")

    def __str__(self) -> str:
        return f"{self.code}: {self.msg}"


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised rows (``claimfsm.skills.embed`` API)."""

    def encode(self, texts: Sequence[str]) -> Any:
        """One row per text."""
        ...


def resolve_embedder(name: str) -> Embedder | None:
    """The embedder a model was trained with, or None when it is not available here.

    ``"hashing-<dim>"`` is ``claimfsm.skills.embed.HashingEmbedder(dim=<dim>)`` (no weights);
    anything else goes to ``claimfsm.skills.embed.load_embedder(name=...)``."""
    try:
        from claimfsm.skills.embed import HashingEmbedder, load_embedder
    except ImportError:
        return None
    if name.startswith("hashing-") and name[8:].isdigit():
        return HashingEmbedder(dim=int(name[8:]))
    try:
        return load_embedder(name=name)
    except ValueError:  # a name this install does not know
        return None


def dense_features(u: Array, v: Array) -> Array:
    """``[cos, u*v, |u-v|]`` per row pair (rows are L2-normalised)."""
    cos = np.sum(u * v, axis=1, keepdims=True)
    return np.hstack([cos, u * v, np.abs(u - v)])


@dataclass(frozen=True)
class Featurizer:
    """Turns (claim, sentence) pairs into feature rows: lexical, then dense if any."""

    embedder: Embedder | None = None

    def names(self, dim: int = 0) -> tuple[str, ...]:
        """Feature names for an embedding of ``dim`` (0: lexical only)."""
        if not dim:
            return LEXICAL_FEATURES
        return (*LEXICAL_FEATURES, "cosine", *(f"uv{i}" for i in range(dim)),
                *(f"diff{i}" for i in range(dim)))

    def matrix(self, pairs: Sequence[tuple[str, str]]) -> Array:
        """An ``(n, d)`` float64 matrix, one row per pair."""
        rows = [_lexical_row(c, s) for c, s in pairs]
        lex = np.asarray(rows, dtype=np.float64).reshape(len(pairs), len(LEXICAL_FEATURES))
        if self.embedder is None or not pairs:
            return lex
        texts = list(dict.fromkeys(t for p in pairs for t in p))
        vecs = np.asarray(self.embedder.encode(texts), dtype=np.float64)
        at = {t: i for i, t in enumerate(texts)}
        u = vecs[[at[c] for c, _ in pairs]]
        v = vecs[[at[s] for _, s in pairs]]
        return np.hstack([lex, dense_features(u, v)])


@functools.lru_cache(maxsize=8192)
def _lexical_row(claim: str, sentence: str) -> tuple[float, ...]:
    # VERIFY and AGGREGATE featurise the same pairs; the lexical row is the costly part.
    return tuple(lexical_features(claim, sentence))


def _softmax(z: Array) -> Array:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: Array = e / e.sum(axis=1, keepdims=True)
    return out


@dataclass(frozen=True)
class StanceModel:
    """Weights over standardised features, the thresholds, and what it was trained with."""

    features: tuple[str, ...]
    weights: Array  # (classes, features), classes in LABELS order
    bias: Array  # (classes,)
    mean: Array  # (features,)
    scale: Array  # (features,)
    support_t: float
    refute_t: float
    embedder: str | None = None
    top: int = 5
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    verdict: VerdictHead | None = None
    """The claim-level verdict head, when the model was trained with one."""
    reranker: Reranker | None = None
    """The evidence reranker EXTRACT applies, when the model was trained with one."""

    def probabilities(self, x: Array) -> Array:
        """``(n, 3)`` probabilities in :data:`claimfsm.skills.stance.lexical.LABELS` order."""
        z = ((x - self.mean) / self.scale) @ self.weights.T + self.bias
        return _softmax(z)

    def label(self, p: Array) -> tuple[Label, float]:
        """A sentence's clear label from its probabilities, and that label's probability."""
        ps, pr = float(p[0]), float(p[1])
        if pr >= self.refute_t and pr - self.refute_t >= ps - self.support_t:
            return "REFUTES", pr
        if ps >= self.support_t:
            return "SUPPORTS", ps
        return "NOT_ENOUGH_INFO", float(p[2])

    def explain(self, x: Array, label: Label, k: int = 3) -> list[str]:
        """The ``k`` features that pushed ``label`` most (dense dimensions summed)."""
        c = LABELS.index(label)
        xs = (x - self.mean) / self.scale
        push = (self.weights[c] - self.weights.mean(axis=0)) * xs
        named: dict[str, float] = {}
        for name, val in zip(self.features, push, strict=True):
            group = "embedding" if name[:2] in ("uv", "di") and name[-1].isdigit() else name
            named[group] = named.get(group, 0.0) + float(val)
        ranked = sorted(named.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [f"{n} {v:+.2f}" for n, v in ranked if v > 0]

    def save(self, path: str | Path) -> None:
        """Write the model as ``.npz`` (no pickles); :class:`ModelError` (``BAD_MODEL``),
        writing nothing, for a model with a non-finite number (:func:`non_finite`)."""
        bad = non_finite(self)
        if bad is not None:
            raise ModelError("BAD_MODEL", f"stance_model: {bad} holds NaN or infinity: "
                             f"not written to {path}")
        head = {"format": FORMAT, "features": list(self.features), "labels": list(LABELS),
                "support_t": self.support_t, "refute_t": self.refute_t,
                "embedder": self.embedder, "top": self.top, "meta": self.meta}
        arrays: dict[str, Any] = {}
        v = self.verdict
        if v is not None:
            head["verdict"] = {"features": list(v.features), "alpha": v.alpha, "l2": v.l2,
                               "top": v.top, "embedder": v.embedder, "k": v.k}
            arrays = {"v_weights": v.weights, "v_bias": v.bias, "v_mean": v.mean,
                      "v_scale": v.scale, "v_prior": v.prior,
                      **{f"v_{name}": val for name, val in (
                          ("bank", v.bank),
                          ("bank_labels", v.bank_labels)) if val is not None}}
        if self.reranker is not None:
            arrays.update(reranker_arrays(self.reranker))
        blob = np.frombuffer(json.dumps(head, sort_keys=True).encode(), dtype=np.uint8)
        with open(path, "wb") as fh:
            np.savez(fh, head=blob, weights=self.weights, bias=self.bias, mean=self.mean,
                     scale=self.scale, **arrays)


def non_finite(model: StanceModel) -> str | None:
    """The name of the first number of ``model`` that is NaN or infinite (an array, a
    threshold, its verdict head's or reranker's), or ``None``: such a model would turn
    every probability into NaN and stop sessions at VERIFY."""
    parts: list[tuple[str, Any]] = [("", model)]
    if model.verdict is not None:
        parts.append(("verdict.", model.verdict))
    if model.reranker is not None:
        parts.append(("reranker.", model.reranker))
    for prefix, part in parts:
        for f in fields(part):
            value = getattr(part, f.name)
            if isinstance(value, float | np.ndarray) and np.issubdtype(
                    np.asarray(value).dtype, np.number) and not np.all(np.isfinite(value)):
                return prefix + f.name
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} in the model's header")


def load_model(path: str | Path) -> StanceModel:
    """Read a model file; :class:`ModelError` (``MODEL_NOT_FOUND``, ``BAD_MODEL``) if it
    cannot be used: not a model file (an empty or truncated one too), larger than
    :data:`MAX_MODEL_BYTES` (on disk or unpacked), arrays that do not fit its features,
    or a number that is NaN or infinite."""
    p = Path(path)
    if not p.is_file():
        raise ModelError("MODEL_NOT_FOUND", f"stance_model: no file {p}")
    if p.stat().st_size > MAX_MODEL_BYTES:
        raise ModelError("BAD_MODEL", f"stance_model: {p}: {p.stat().st_size} bytes, the "
                         f"limit is {MAX_MODEL_BYTES}")
    try:
        with np.load(p, allow_pickle=False) as z:
            unpacked = sum(z.zip.getinfo(name).file_size for name in z.zip.namelist())
            if unpacked > MAX_MODEL_BYTES:
                raise ModelError("BAD_MODEL", f"stance_model: {p}: unpacks to {unpacked} "
                                 f"bytes, the limit is {MAX_MODEL_BYTES}")
            head = (json.loads(bytes(z["head"]).decode(), parse_constant=_reject_constant)
                    if "head" in z.files else None)
            if not isinstance(head, dict) or head.get("format") != FORMAT:
                raise ModelError("BAD_MODEL", f"stance_model: {p} is not a {FORMAT} file")
            arrays = {k: np.asarray(z[k], dtype=np.float64)
                      for k in ("weights", "bias", "mean", "scale")}
            verdict = _read_head(z, head.get("verdict"), p)
            reranker = read_reranker(z, z.files)
        feats = tuple(head["features"])
        if (arrays["weights"].shape != (len(LABELS), len(feats))
                or tuple(head["labels"]) != LABELS
                or arrays["bias"].shape != (len(LABELS),)
                or arrays["mean"].shape != (len(feats),)
                or arrays["scale"].shape != (len(feats),)):
            raise ModelError("BAD_MODEL", f"stance_model: {p}: weights do not match features")
        if feats[: len(LEXICAL_FEATURES)] != LEXICAL_FEATURES:
            # A file from before the feature set changed (the alignment features): its
            # weights would be read against the wrong columns.
            raise ModelError("BAD_MODEL", f"stance_model: {p}: trained on another feature "
                             "set; retrain it with claimfsm train")
        model = StanceModel(features=feats, support_t=float(head["support_t"]),
                            refute_t=float(head["refute_t"]), embedder=head.get("embedder"),
                            top=int(head.get("top", 5)), meta=dict(head.get("meta") or {}),
                            verdict=verdict, reranker=reranker, **arrays)
    except ModelError:
        raise
    # np.load raises EOFError on an empty file and BadZipFile on a damaged one; the
    # header's own fields may be of any JSON type (AttributeError, TypeError).
    except (OSError, ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError,
            EOFError, zipfile.BadZipFile) as exc:
        raise ModelError("BAD_MODEL", f"stance_model: cannot read {p}: {exc}") from exc
    bad = non_finite(model)
    if bad is not None:
        raise ModelError("BAD_MODEL", f"stance_model: {p}: {bad} holds NaN or infinity")
    return model


def _read_head(z: Any, spec: Any, p: Path) -> VerdictHead | None:
    if spec is None:
        return None
    a = {k: np.asarray(z["v_" + k], dtype=np.float64)
         for k in ("weights", "bias", "mean", "scale", "prior")}
    feats = tuple(spec["features"])
    if a["weights"].shape != (4, len(feats)) or a["prior"].shape != (4,):
        raise ModelError("BAD_MODEL", f"stance_model: {p}: verdict head does not match")
    extra = {k: np.asarray(z["v_" + k], dtype=np.float64)
             for k in ("bank", "bank_labels") if "v_" + k in z.files}
    if (("bank" in extra) != ("bank_labels" in extra)
            or len(extra.get("bank", ())) != len(extra.get("bank_labels", ()))):
        raise ModelError("BAD_MODEL", f"stance_model: {p}: verdict head does not match")
    return VerdictHead(features=feats, alpha=float(spec["alpha"]), l2=float(spec["l2"]),
                       top=int(spec["top"]), embedder=spec.get("embedder"),
                       k=int(spec.get("k", 20)), **a, **extra)


@functools.lru_cache(maxsize=8)
def cached_model(path: str) -> tuple[StanceModel, Featurizer | None, str | None]:
    """``(model, featurizer, None)``, or ``(model, None, reason)`` when the model's
    embedder is not available here (the caller falls back to the lexical judge).
    Raises :class:`ModelError` for a missing or unreadable file."""
    model = load_model(path)
    if model.embedder is None:
        return model, Featurizer(), None
    emb = resolve_embedder(model.embedder)
    if emb is None:
        return model, None, (f"stance model {Path(path).name} needs embedder "
                             f"'{model.embedder}', which is not available: lexical judge used")
    return model, Featurizer(emb), None
