"""Grouped folds: claims that share evidence or nearly share wording stay together.

Climate-FEVER's claims come in families: the same claim reworded, and different claims
annotated against the same Wikipedia sentences. A fold split by claim alone puts one
member in training and its twin in the held-out fold, so anything learned (or tuned)
on the one scores the other from memory: the dev figures overstated unseen claims by
0.07-0.08 accuracy. Here claims are joined into groups (union-find) when

- they share an annotated evidence sentence, or
- their content-word sets are near duplicates (Jaccard >= :data:`NEAR_DUPLICATE`),

Shared sentences chain: joined transitively, 806 of dev's 1,228 claims would form one
group and no five folds could be balanced. So links are joined strongest first (near
duplicates, then pairs sharing more sentences) and a link that would grow a group past
``len(claims) / (2 * k)`` is left out; :func:`cross_links` counts what is left out (on
dev with k = 5: see docs/eval.md). Whole groups are dealt to folds, largest first, each
to the fold holding most of its links, else the smallest, so folds stay balanced; a
fixed seed orders groups of one size, so the assignment is deterministic.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from claimfsm.eval.data import Dataset
from claimfsm.skills.analysis.text import keywords, stem

__all__ = ["NEAR_DUPLICATE", "claim_groups", "cross_links", "grouped_folds", "links",
           "split_groups"]

NEAR_DUPLICATE = 0.6
"""Jaccard similarity of two claims' stemmed content words from which they are one group."""


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _union(parent: list[int], size: list[int], a: int, b: int, cap: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb and size[ra] + size[rb] <= cap:
        keep, gone = min(ra, rb), max(ra, rb)
        parent[gone] = keep
        size[keep] += size[gone]


def _near_duplicates(texts: Sequence[str]) -> list[tuple[int, int, float]]:
    bags = [frozenset(stem(w) for w in keywords(t)) for t in texts]
    # Only claims sharing a word can be near duplicates: compare within the postings of
    # each claim's rarest word, not all pairs.
    postings: dict[str, list[int]] = {}
    for i, bag in enumerate(bags):
        for w in bag:
            postings.setdefault(w, []).append(i)
    pairs: dict[tuple[int, int], float] = {}
    for i, bag in enumerate(bags):
        if not bag:
            continue
        rare = min(bag, key=lambda w: (len(postings[w]), w))
        for j in postings[rare]:
            if j <= i:
                continue
            other = bags[j]
            sim = len(bag & other) / len(bag | other)
            if sim >= NEAR_DUPLICATE:
                pairs[(i, j)] = sim
    return [(i, j, sim) for (i, j), sim in sorted(pairs.items())]


def links(data: Dataset) -> list[tuple[float, int, int]]:
    """``(strength, i, j)`` for every pair of claims that should share a fold, strongest
    first: near duplicates (10 + Jaccard), then the number of shared sentences."""
    shared: dict[tuple[int, int], int] = {}
    holders: dict[str, list[int]] = {}
    for i, gold in enumerate(data.gold):
        for eid in dict.fromkeys(ev.evidence_id for ev in gold.evidences):
            for j in holders.setdefault(eid, []):
                shared[(j, i)] = shared.get((j, i), 0) + 1
            holders[eid].append(i)
    out = [(float(c), i, j) for (i, j), c in shared.items()]
    out += [(10.0 + sim, i, j) for i, j, sim in _near_duplicates([c.claim for c in data.claims])]
    return sorted(out, key=lambda e: (-e[0], e[1], e[2]))


def claim_groups(data: Dataset, k: int = 5) -> list[int]:
    """For each claim (dataset order), the index of the first claim of its group; no
    group grows past ``len(claims) / (2 * k)``."""
    n = len(data.claims)
    parent, size = list(range(n)), [1] * n
    cap = max(1, n // (2 * k))
    for _, i, j in links(data):
        _union(parent, size, i, j, cap)
    return [_find(parent, i) for i in range(n)]


def cross_links(data: Dataset, fold: Sequence[int]) -> tuple[int, int]:
    """``(links across folds, all links)``: what the grouping could not keep together."""
    all_links = links(data)
    return sum(1 for _, i, j in all_links if fold[i] != fold[j]), len(all_links)


def split_groups(
    groups: Sequence[int], k: int, pairs: Sequence[tuple[float, int, int]] = (),
    order: Sequence[int] | None = None,
) -> list[int]:
    """Each claim's fold in ``0..k-1``: whole groups, largest first (groups of one size
    in ``order``, a permutation of the claims, default a fixed shuffle, so the file
    order, which may follow the labels, does not decide the folds), each to the fold it
    has the most ``pairs`` links to among the folds with room (``ceil(n / k)``), else to
    the smallest fold (ties: the lowest). Claims without links in the order of a
    permutation get the folds of the plain K-fold split by that permutation."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    if order is None:
        shuffled = list(range(len(groups)))
        random.Random(13).shuffle(shuffled)
        order = shuffled
    at = {claim: n for n, claim in enumerate(order)}
    rank = {g: min(at[i] for i in m) for g, m in members.items()}
    near: dict[int, list[int]] = {}
    for _, i, j in pairs:
        near.setdefault(groups[i], []).append(j)
        near.setdefault(groups[j], []).append(i)
    room = -(-len(groups) // k)
    sizes = [0] * k
    fold = [-1] * len(groups)
    for g in sorted(members, key=lambda g: (-len(members[g]), rank[g])):
        pull = [0] * k
        for j in near.get(g, ()):
            if fold[j] >= 0:
                pull[fold[j]] += 1
        open_ = [f for f in range(k) if sizes[f] + len(members[g]) <= room] or list(range(k))
        f = min(open_, key=lambda f: (-pull[f], sizes[f], f))
        for i in members[g]:
            fold[i] = f
        sizes[f] += len(members[g])
    return fold


def grouped_folds(data: Dataset, k: int, order: Sequence[int] | None = None) -> list[int]:
    """Each claim's fold, groups kept whole (see the module doc); ``order`` as for
    :func:`split_groups`."""
    return split_groups(claim_groups(data, k), k, links(data), order)
