"""A session's stored config as the engine reads it: typed, read in one place.

A session keeps how it verifies in its config (``SessionState.config``, a JSON object):
the profile (``Profile.config()`` writes it), the run settings of
:data:`~claimfsm.engine.profile.RUN_CONFIG` and whatever a caller added. That stored
format is the wire format of revisions and records and stays as it is; the engine reads
it through :class:`SessionSettings` instead of loose ``config.get`` calls, so the
bindings (what a skill's input gets) and the tool runtime (the retrieval mode) read the
same keys the same way.

Values are taken as stored, never converted: a skill's input built from them must be
byte for byte what it was when the session was recorded, and the skill validates its
input itself. A key that is absent (or ``null``) reads as ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from claimfsm.engine.profile import Profile, Retrieval, stored_profile

__all__ = ["SessionSettings"]


# A NamedTuple, not a frozen dataclass: as immutable and as typed, a seventh of the cost
# to define on a command's import path and a quarter of the cost to build, several times
# a step.
class SessionSettings(NamedTuple):
    """The keys of a session's config that the engine reads.

    ``profile``: the verification profile (``"profile"``; ``None`` for a session from
    before profiles). ``thresholds``: the lexical judge's threshold set (the key
    ``"judge"``, a name of ``claimfsm.skills.stance.config.THRESHOLDS``).
    ``stance_model``: the learned judge's model file (the top-level key, which
    ``Profile.config()`` writes and sessions from before profiles carry alone).
    ``hints`` (PARSE_CLAIM), ``batch`` and ``claim_lim`` (RETRIEVAL), ``max_rounds``,
    ``docs_per_claim``, ``per_claim``, ``min_best`` and ``rank`` (EXTRACT): the skills'
    settings of the same names.
    """

    profile: Profile | None
    thresholds: str | None
    stance_model: str | None
    hints: list[str] | None
    batch: int
    claim_lim: int | None
    max_rounds: int
    docs_per_claim: int | None
    per_claim: int | None
    min_best: float | None
    rank: bool | None

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> SessionSettings:
        """Read ``config`` (runs on every step: no validation beyond the profile's)."""
        get = config.get
        return cls(profile=stored_profile(config), thresholds=get("judge"),
                   stance_model=get("stance_model"), hints=get("hints"),
                   batch=get("batch", 1), claim_lim=get("claim_lim"),
                   max_rounds=get("max_rounds", 1), docs_per_claim=get("docs_per_claim"),
                   per_claim=get("per_claim"), min_best=get("min_best"), rank=get("rank"))

    @property
    def retrieval(self) -> Retrieval | None:
        """How the search tools rank (``None``: as before profiles, lexically)."""
        return None if self.profile is None else self.profile.retrieval

    def judge_input(self) -> dict[str, Any]:
        """What VERIFY and AGGREGATE get of the config: ``profile`` (the threshold set)
        and, for a learned judge, ``stance_model``; absent ones stay out of the input."""
        out: dict[str, Any] = {} if self.thresholds is None else {"profile": self.thresholds}
        if self.stance_model is not None:
            out["stance_model"] = self.stance_model
        return out

    def extract_input(self) -> dict[str, Any]:
        """EXTRACT's optional settings that the config sets (unset ones keep the skill's
        defaults, and stay out of the input)."""
        given = (("docs_per_claim", self.docs_per_claim), ("per_claim", self.per_claim),
                 ("min_best", self.min_best), ("rank", self.rank))
        return {key: value for key, value in given if value is not None}
