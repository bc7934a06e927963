"""Grouped folds (fsm/eval/groups.py): near duplicates and claims sharing evidence stay
in one fold, folds stay balanced, and the assignment is deterministic."""

from __future__ import annotations

import json
from pathlib import Path

from claimfsm.eval.data import read_dataset
from claimfsm.eval.groups import claim_groups, cross_links, grouped_folds, split_groups


def _row(cid: str, claim: str, evidence: list[str]) -> str:
    evs = [{"evidence_id": e, "evidence_label": "SUPPORTS", "article": e.split(":")[0],
            "evidence": f"sentence {e}", "entropy": 0.0, "votes": ["SUPPORTS"]}
           for e in evidence]
    evs += [{"evidence_id": f"pad-{cid}:{n}", "evidence_label": "NOT_ENOUGH_INFO",
             "article": "pad", "evidence": "pad", "entropy": 0.0, "votes": []}
            for n in range(5 - len(evs))]
    return json.dumps({"claim_id": cid, "claim": claim, "claim_label": "SUPPORTS",
                       "evidences": evs})


def _dataset(tmp_path: Path) -> Path:
    rows = [
        _row("0", "Sea level is rising fast.", ["A:1"]),
        _row("1", "Sea levels are rising fast.", ["B:1"]),          # near duplicate of 0
        _row("2", "Glaciers are retreating worldwide.", ["C:1"]),
        _row("3", "The Sun drives recent warming.", ["C:1"]),       # shares C:1 with 2
        _row("4", "Coral reefs are bleaching.", ["D:1"]),
        _row("5", "Arctic ice is thinning.", ["E:1"]),
        _row("6", "Hurricanes are getting stronger.", ["F:1"]),
        _row("7", "Droughts are more frequent.", ["G:1"]),
    ]
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_linked_claims_share_a_fold(tmp_path: Path) -> None:
    data = read_dataset(_dataset(tmp_path))
    groups = claim_groups(data, k=2)
    assert groups[0] == groups[1] and groups[2] == groups[3]
    assert len(set(groups)) == 6
    fold = grouped_folds(data, 2)
    assert fold[0] == fold[1] and fold[2] == fold[3]
    assert sorted(fold.count(f) for f in (0, 1)) == [4, 4]
    assert cross_links(data, fold) == (0, 2)
    assert grouped_folds(data, 2) == fold  # deterministic


def test_groups_stay_under_the_cap_and_folds_balanced() -> None:
    # a group larger than a fold's room still lands whole, in the emptiest fold
    got = split_groups([0, 0, 0, 1, 2, 3], 3)
    assert got[:3] == [0, 0, 0] and sorted(got[3:]) == [1, 1, 2]
    fold = split_groups(list(range(10)), 5)
    assert sorted(fold.count(f) for f in range(5)) == [2, 2, 2, 2, 2]


def test_the_file_order_does_not_decide_the_folds() -> None:
    # singletons in file order 0, 1, 2, 3, ... must not be dealt round-robin (labels in
    # a file often cycle the same way)
    fold = split_groups(list(range(16)), 4)
    assert fold != [n % 4 for n in range(16)]
    # a permutation deals unlinked claims as a plain K-fold split by it would
    order = [3, 1, 0, 2, 7, 5, 4, 6]
    assert split_groups(list(range(8)), 4, order=order) == [2, 1, 3, 0, 2, 1, 3, 0]
