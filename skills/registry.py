"""Every built-in skill by name (``claimfsm skill NAME`` looks them up here)."""

from __future__ import annotations

from typing import Any

from claimfsm.skills import (
    evidence_extract,
    evidence_query_plan,
    parse_claim,
    retrieve,
    stance_judge,
    tool_request_compose,
    verdict_aggregate,
)
from claimfsm.skills.base import Skill

__all__ = ["all_skills"]

_MODULES = (
    parse_claim,
    evidence_query_plan,
    tool_request_compose,
    retrieve,
    evidence_extract,
    stance_judge,
    verdict_aggregate,
)


def all_skills() -> dict[str, Skill[Any, Any]]:
    """A fresh name -> skill mapping, in pipeline order."""
    return {m.SKILL.name: m.SKILL for m in _MODULES}
