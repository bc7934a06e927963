"""The stance judge's machinery, behind the ``stance_judge`` skill: the lexical judge
(features, lexicon, number checks, thresholds, combining sentence stances into a
verdict) and the optional learned model with its claim-level verdict head.

May import ``claimfsm.skills.analysis``, ``claimfsm.skills.embed`` and
``claimfsm.skills.envelope``/``base``; never
``fsm`` or ``state``. The learned modules need numpy and are not imported here.
"""

from claimfsm.skills.stance.combine import Combined, combine_stances, is_disputed
from claimfsm.skills.stance.config import (
    CALIBRATED_CONFIG,
    DEFAULT_CONFIG,
    THRESHOLDS,
    StanceConfig,
    Thresholds,
)
from claimfsm.skills.stance.lexical import LABELS, Label, Stance, relevance, sentence_stance
from claimfsm.skills.stance.numbers import (
    NUMBER_WORDS,
    Num,
    NumberCheck,
    compare_numbers,
    find_numbers,
)

__all__ = [
    "CALIBRATED_CONFIG",
    "DEFAULT_CONFIG",
    "LABELS",
    "NUMBER_WORDS",
    "THRESHOLDS",
    "Combined",
    "Label",
    "Num",
    "NumberCheck",
    "Stance",
    "StanceConfig",
    "Thresholds",
    "combine_stances",
    "compare_numbers",
    "find_numbers",
    "is_disputed",
    "relevance",
    "sentence_stance",
]
