"""MiniLM's one-text path on torch: tokenizer, forward pass, mean pooling and
normalisation, without sentence-transformers' ``encode``.

``encode`` adds 1.5-4 ms of Python per call to a ~14 ms forward pass; a query is encoded
alone, so :class:`claimfsm.skills.embed.MiniLMEmbedder`'s ``torch`` backend cuts its
path to what the model needs. Only for the layout all-MiniLM-L6-v2 ships with
(transformer, mean pooling, normalise): :func:`direct_parts` answers ``None`` for
anything else, which keeps ``encode``. torch is imported only when a text is run.
"""

from __future__ import annotations

from typing import Any

__all__ = ["direct_parts", "forward_one"]


def direct_parts(model: Any) -> tuple[Any, Any, int] | None:
    """``(tokenizer, transformer, max length)`` of a sentence-transformers ``model`` of
    MiniLM's layout, else ``None``."""
    try:
        first, pool = model[0], model[1]
        auto, tok = first.auto_model, model.tokenizer
        limit = int(model.max_seq_length)
        mean_only = getattr(pool, "pooling_mode", None) == "mean" or (
            getattr(pool, "get_pooling_mode_str", lambda: "")() == "mean")
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return None
    if len(model) != 3 or not mean_only or type(model[2]).__name__ != "Normalize":
        return None
    return tok, auto, limit


def forward_one(parts: tuple[Any, Any, int], text: str) -> Any:
    """The normalised sentence vector of ``text`` (a 1 x dim numpy array), as
    ``encode`` with ``normalize_embeddings=True`` gives it."""
    import torch
    import torch.nn.functional as F

    tok, auto, limit = parts
    feats = tok([text], padding=True, truncation="longest_first", max_length=limit,
                return_tensors="pt")
    hidden = auto(**feats, return_dict=True).last_hidden_state
    # One text, no padding: the same sums sentence-transformers' mean pooling takes.
    mask = feats["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    summed = (hidden * mask).sum(dim=1, dtype=hidden.dtype)
    count = torch.clamp(mask.sum(dim=1, dtype=hidden.dtype), min=1e-9)
    # Twice, as encode does: the model's Normalize module, then normalize_embeddings.
    once = F.normalize(summed / count, p=2, dim=-1)
    return F.normalize(once, p=2, dim=1).numpy()
