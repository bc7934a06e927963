"""Every threshold and weight of the stance judge, named and documented in one place.

The judge is lexical and explainable; these numbers are what gets tuned on real data
(Climate-FEVER dev split), so nothing else in ``skills/stance*.py`` hard-codes a cut-off.
Scores live in ``[0, 1]`` and are rounded to :attr:`StanceConfig.places` decimals so the
same input always gives the same bytes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_CONFIG", "StanceConfig"]


class StanceConfig(BaseModel):
    """Thresholds and weights for :func:`skills.stance.sentence_stance` and the judge."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # --- relevance: is the sentence about the claim at all? -------------------------
    entity_weight: float = Field(
        1.5, gt=0, description="Weight of a capitalised claim term (a name) in relevance; "
        "other key terms weigh 1.0.")
    min_relevance: float = Field(
        0.5, ge=0, le=1, description="Below this weighted key-term coverage the sentence "
        "is NOT_ENOUGH_INFO whatever else it says.")
    min_predicate_coverage: float = Field(
        0.5, ge=0, le=1, description="Share of the claim's non-name key terms a sentence "
        "must cover to support or refute it (names alone do not make a fact).")

    # --- support --------------------------------------------------------------------
    support_min: float = Field(
        0.65, ge=0, le=1, description="Support score needed for SUPPORTS.")
    number_agree_bonus: float = Field(
        0.15, ge=0, le=1, description="Added to support when the claim's numbers recur.")
    direction_agree_bonus: float = Field(
        0.1, ge=0, le=1, description="Added to support when both say the same direction "
        "of change (rise ~ increase).")
    unconfirmed_number_factor: float = Field(
        0.5, ge=0, le=1, description="Support multiplier when the claim has a number the "
        "sentence neither confirms nor contradicts.")

    # --- refutation -----------------------------------------------------------------
    refute_min: float = Field(
        0.5, ge=0, le=1, description="Refute score needed for REFUTES.")
    refute_relevance_weight: float = Field(
        0.65, ge=0, le=1, description="Refute score = this * relevance + signal weights.")
    clash_min_relevance: float = Field(
        0.8, ge=0, le=1, description="A number clash or an opposite direction/antonym "
        "counts only when the sentence covers this much of the claim: such words often "
        "describe another aspect (sea ice loss in a sentence about sea level).")
    number_clash_weight: float = Field(
        0.4, ge=0, le=1, description="A claim number contradicted by a different number "
        "of the same kind (year vs year).")
    negation_weight: float = Field(
        0.35, ge=0, le=1, description="One side negates what the other asserts.")
    antonym_weight: float = Field(
        0.35, ge=0, le=1, description="Opposite direction of change or an antonym pair.")
    entity_mismatch_weight: float = Field(
        0.35, ge=0, le=1, description="A different name in an exclusive relation "
        "(capital, largest, first, born ...).")
    number_rel_tol: float = Field(
        0.02, ge=0, le=1, description="Relative tolerance for non-year numbers to agree.")

    # --- hedges and negation scope -------------------------------------------------
    hedge_factor: float = Field(
        0.75, ge=0, le=1, description="Score multiplier when the sentence hedges (may, "
        "possibly, suggests) and the claim does not.")
    negation_window: int = Field(
        5, ge=1, description="Tokens a negation cue reaches to find a claim term.")

    # --- combining sentence stances (stance_judge, verdict_aggregate) --------------
    clear_min: float = Field(
        0.6, ge=0, le=1, description="A sentence stance counts for a verdict when its "
        "score is at least this.")
    dispute_min: float = Field(
        0.7, ge=0, le=1, description="Both the best support and the best refutation at "
        "least this strong ...")
    dispute_margin: float = Field(
        0.15, ge=0, le=1, description="... and closer than this: the evidence strongly "
        "goes both ways (NOT_ENOUGH_INFO for the subclaim, DISPUTED for the claim). "
        "A side wins a subclaim only by at least this margin over the other.")
    opposition_discount: float = Field(
        0.5, ge=0, le=1, description="A winning side's confidence drops by this times "
        "the losing side's best clear score.")
    max_cites: int = Field(3, ge=1, description="Citations kept per subclaim verdict.")
    places: int = Field(4, ge=0, le=10, description="Decimal places of every score.")


DEFAULT_CONFIG = StanceConfig()
"""The configuration used when none is passed."""
