"""What-if forks: fork a session at a revision and run the fork on with another
verification profile (retrieval, judge, stance model, language model), checked as
``start`` checks a profile before anything is stored. The lineage it records is
:mod:`claimfsm.engine.lineage`'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from claimfsm.engine.lineage import fork_profile
from claimfsm.engine.profile import profile_of
from claimfsm.engine.runtime import Engine, ProfiledTools, check_profile
from claimfsm.state.model import Revision

__all__ = ["PROFILE_FIELDS", "what_if_fork"]

PROFILE_FIELDS: tuple[str, ...] = ("retrieval", "judge", "stance_model")
"""The profile fields a fork request may change (the model options too, on the CLI)."""


def what_if_fork(engine: Engine, sid: str, at: int,
                 options: Mapping[str, Any] | None = None,
                 new_sid: str | None = None, *, actor: str | None = None) -> Revision:
    """Fork ``sid`` at ``at``; with ``options`` (``None`` values: unchanged) the fork runs
    on with its parent's profile changed by them. Nothing is stored when the profile
    cannot run here (:class:`~claimfsm.engine.profile.ProfileError`: a bad value, a model
    file that is missing or does not load, a missing extra). ``actor``: who forked it,
    recorded in the fork's own revision."""
    given = {k: v for k, v in (options or {}).items() if v is not None}
    if not given:
        return engine.driver.fork(sid, at, new_sid, actor=actor)
    source = engine.store.get(sid, at)
    profile = fork_profile(profile_of(source.state.config), given)
    check_profile(profile)
    if profile.retrieval == "hybrid" and isinstance(engine.driver.tools, ProfiledTools):
        engine.driver.tools.ensure_dense()
    return engine.driver.fork(sid, at, new_sid, profile=profile, actor=actor)
