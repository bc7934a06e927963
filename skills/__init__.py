"""The skills: one module per state's skill, all the same shape (Input, Output,
handler), answering with the ``{s, d, e, rb}`` envelope.

The seven skill modules sit at the top (``parse_claim``, ``evidence_query_plan``,
``tool_request_compose``, ``retrieve``, ``evidence_extract``, ``stance_judge``,
``verdict_aggregate``) beside their shared base, context and envelope; the judge's
machinery is in ``claimfsm.skills.stance``, claim analysis in ``claimfsm.skills.analysis``, the
evidence
tools and their runtime in ``claimfsm.skills.tools``. Skills are pure given their input and the
injected clock/id source; this package imports ``claimfsm._base`` and nothing else of claimfsm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from claimfsm._base.lazy import lazy_exports

if TYPE_CHECKING:
    from claimfsm.skills.base import BaseIO, Skill
    from claimfsm.skills.context import Clock, FixedClock, IdSource, SeqIds, SkillContext
    from claimfsm.skills.envelope import Envelope, ErrorInfo, Rollback, StatePatch, Status
    from claimfsm.skills.registry import all_skills

__all__ = [
    "BaseIO",
    "Clock",
    "Envelope",
    "ErrorInfo",
    "FixedClock",
    "IdSource",
    "Rollback",
    "SeqIds",
    "Skill",
    "SkillContext",
    "StatePatch",
    "Status",
    "all_skills",
]

__getattr__ = lazy_exports(__name__, {
    "BaseIO": "claimfsm.skills.base", "Skill": "claimfsm.skills.base",
    "Clock": "claimfsm.skills.context", "FixedClock": "claimfsm.skills.context",
    "IdSource": "claimfsm.skills.context", "SeqIds": "claimfsm.skills.context",
    "SkillContext": "claimfsm.skills.context", "Envelope": "claimfsm.skills.envelope",
    "ErrorInfo": "claimfsm.skills.envelope", "Rollback": "claimfsm.skills.envelope",
    "StatePatch": "claimfsm.skills.envelope", "Status": "claimfsm.skills.envelope",
    "all_skills": "claimfsm.skills.registry",
})
