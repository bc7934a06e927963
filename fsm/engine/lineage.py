"""Lineage: where a session came from (a fork's parent), what a what-if fork changed, and
which sessions were forked from one.

A fork copies its parent's revisions ``0..at`` (:meth:`StateStore.fork`) and then commits
one revision of its own, ``at + 1``, stamped with the time of the fork: a ``Forked``
event naming the parent (``{"sid", "rev"}``) and the profile fields it changed (``[]``
for a plain fork), and the link under ``state.runtime["forked_from"]``, so that every
later revision, rewinds included, carries it and reading it costs one look at the head.
It is stored as any revision is, so every backend keeps it and an old store opens as
before. A what-if fork's revision also holds its new profile in ``state.config``: the
fork runs on with it from ``at``.

The commit of that revision also records the fork under its parent in the store's forks
index, in the same transaction (:mod:`claimfsm.state.lineage`), so the forks of a session
are one indexed read (:func:`forks_of`), whatever the number of sessions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from claimfsm.engine.profile import Profile, profile_of, resolve_profile
from claimfsm.state.lineage import FORKED, LINEAGE_KEY
from claimfsm.state.model import Revision, SessionState, trusted

if TYPE_CHECKING:
    from claimfsm.state.store import StateStore

__all__ = [
    "FORKED",
    "LINEAGE_KEY",
    "changed_fields",
    "fork_profile",
    "fork_revision",
    "forked_event",
    "forked_from",
    "forks_of",
    "lineage_json",
    "lineage_text",
    "parents_of",
]



def forked_from(head: Revision) -> dict[str, Any] | None:
    """``{"sid", "rev", "at"}`` of the fork ``head`` belongs to, or ``None`` (not a fork,
    or one made before forks recorded their parent)."""
    link = head.state.runtime.get(LINEAGE_KEY) if head.state.runtime else None
    return dict(link) if isinstance(link, Mapping) else None


def forked_event(revisions: Iterable[Revision]) -> dict[str, Any] | None:
    """The last ``Forked`` event among ``revisions`` (what the fork changed)."""
    found = None
    for rev in revisions:
        for event in rev.events:
            if event.get("type") == FORKED:
                found = event
    return found


def forks_of(store: StateStore, sid: str, limit: int = 100) -> list[dict[str, Any]]:
    """The sessions forked from ``sid`` (``{"sid", "rev", "at"}``: the fork, the parent's
    revision it starts from, when), in creation order, at most ``limit``: the store's
    forks index (:meth:`~claimfsm.state.store.StateStore.forks`)."""
    return store.forks(sid, limit)


def lineage_json(store: StateStore, head: Revision, *, forks: bool = True
                 ) -> dict[str, Any]:
    """``{"forked_from": {"sid", "rev", "at", "changes"} | None, "forks": [{"sid", "rev",
    "at"}]}`` of the session at ``head``: its parent (with what a what-if changed, read
    from the fork's own revision) and, with ``forks``, the sessions forked from it."""
    link = forked_from(head)
    if link is not None:
        mark = link.get("rev")
        event = None
        if isinstance(mark, int) and mark + 1 <= head.rev:
            event = forked_event([store.get(head.sid, mark + 1)])
        link["changes"] = list(event.get("changes", [])) if event else []
    out: dict[str, Any] = {"forked_from": link}
    if forks:
        out["forks"] = forks_of(store, head.sid)
    return out


def parents_of(store: StateStore, sids: Sequence[str]) -> dict[str, dict[str, Any] | None]:
    """``{"sid", "rev", "at"}`` of the parent of each of ``sids`` that is a fork (``None``
    for the others): one read of their heads."""
    heads = store.heads(list(sids))
    return {sid: (forked_from(heads[sid]) if sid in heads else None) for sid in sids}


def lineage_text(lineage: Mapping[str, Any]) -> list[str]:
    """``forked from SID@REV at TS (judge: lexical -> learned)`` and ``forks: SID@REV,
    ...`` for people (nothing for a session that is neither)."""
    lines = []
    link = lineage.get("forked_from")
    if link:
        changed = ", ".join(f"{c['field'].removeprefix('profile.')}: {c['old']} -> {c['new']}"
                            for c in link.get("changes", []))
        lines.append(f"forked from {link['sid']}@{link['rev']} at {link.get('at')}"
                     + (f" ({changed})" if changed else ""))
    forks = lineage.get("forks")
    if forks:
        lines.append("forks: " + ", ".join(f"{f['sid']}@{f['rev']}" for f in forks))
    return lines


def fork_profile(parent: Profile, options: Mapping[str, Any]) -> Profile:
    """The profile a what-if fork runs with: the parent's, with each option given
    (``None``: unchanged) put over it. A model file implies the learned judge; another
    judge drops the parent's model file. Never the config file's: a fork changes only
    what it is told to. Raises :class:`~claimfsm.engine.profile.ProfileError`."""
    given = {k: v for k, v in options.items() if v is not None}
    values = parent.to_dict()
    if "stance_model" in given and "judge" not in given:
        values["judge"] = "learned"
    if given.get("judge") not in (None, "learned"):
        values.pop("stance_model", None)
    values.update(given)
    if values.get("stance_model") is None:
        values.pop("stance_model", None)
    return resolve_profile(values, use_config=False)


def changed_fields(old: Profile, new: Profile) -> list[dict[str, Any]]:
    """``[{"field": "profile.judge", "old", "new"}]`` for each profile field that differs."""
    before, after = old.to_dict(), new.to_dict()
    return [{"field": f"profile.{key}", "old": before.get(key), "new": after.get(key)}
            for key in dict.fromkeys([*before, *after]) if before.get(key) != after.get(key)]


def _config(config: Mapping[str, Any], old: Profile, new: Profile) -> dict[str, Any]:
    # What the old profile wrote goes (a lexical judge has no model file); the rest of
    # the config (limits, the run settings) stays as the session started with it.
    out = {k: v for k, v in config.items() if k not in old.config()}
    return {**out, **new.config()}


def fork_revision(copy: Revision, parent: str, ts: str,
                  profile: Profile | None = None, *, actor: str | None = None) -> Revision:
    """The fork's own revision after ``copy`` (its head as copied, revision ``at``): the
    same state and FSM state, stamped ``ts``, with the ``Forked`` event and the link; with
    ``profile`` (a what-if), the session's config runs with it from here. ``actor`` (who
    forked it) goes into the event; ``None`` adds nothing, as before actors existed."""
    state = copy.state
    changes: list[dict[str, Any]] = []
    fields: dict[str, Any] = {}
    if profile is not None:
        old = profile_of(state.config)
        changes = changed_fields(old, profile)
        if changes:
            fields["config"] = _config(state.config, old, profile)
    link = {"sid": parent, "rev": copy.rev, "at": ts}
    fields["runtime"] = {**state.runtime, LINEAGE_KEY: link}
    new_state = trusted(SessionState, {**state.__dict__, **fields})
    event: dict[str, Any] = {"type": FORKED, "from": {"sid": parent, "rev": copy.rev},
                             "changes": changes}
    if actor is not None:
        event["actor"] = actor
    return trusted(Revision, {
        "sid": copy.sid, "rev": copy.rev + 1, "parent_rev": copy.rev, "fsm": copy.fsm,
        "skill": None, "envelope": None, "state": new_state, "ts": ts, "events": [event]})
