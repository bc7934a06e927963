"""The declared versions of the built-in skills, and the digest of the files they read.

A skill's version is bumped by hand when its behaviour changes (what it answers for some
input): it is part of the version of every machine that binds it, so sessions started
before the bump refuse to run on the new code until migrated or allowed
(docs/versioning.md). The table lives here, not only in each skill's module, so that a
machine's version is known without importing every skill (the CLI steps one session
importing one skill).

``SKILL_FILES`` is the hook for files a skill's behaviour depends on (prompt files, a
bundled model): package-relative paths under ``claimfsm.skills`` whose *contents* are
digested into the machine version, so editing a prompt is a new version without a bump.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["SKILL_FILES", "SKILL_VERSIONS", "content_digest", "declared"]

#: Built-in skill -> its version. Bump the entry with the change that alters behaviour.
SKILL_VERSIONS: dict[str, str] = {
    "parse_claim": "1",
    "evidence_query_plan": "1",
    "tool_request_compose": "1",
    "retrieve": "1",
    "evidence_extract": "1",
    "stance_judge": "4",
    "verdict_aggregate": "2",
}

#: Built-in skill -> files (relative to the ``claimfsm.skills`` package) it reads: the
#: prompts its model-backed form sends (``--planner model``, ``--judge model``), so an
#: edited prompt changes the machine's version even though no code changed.
SKILL_FILES: dict[str, tuple[str, ...]] = {
    "parse_claim": ("prompts/planner.v1.md",),
    "stance_judge": ("prompts/judge.v1.md",),
}


def content_digest(data: bytes) -> str:
    """sha256 hex of a file's bytes: what a version holds of a prompt or model file (its
    contents, never its path, so the version is the same on every machine)."""
    return hashlib.sha256(data).hexdigest()


def _file_digests(name: str) -> tuple[tuple[str, str], ...]:
    # This module's own folder is the package's: read as importlib.resources.files would
    # read a package installed as files, without importing importlib.resources (and
    # tempfile, zipfile...) in every process that computes a machine's version.
    root = Path(__file__).parent
    out = []
    for rel in SKILL_FILES.get(name, ()):
        out.append((rel, content_digest(root.joinpath(rel).read_bytes())))
    return tuple(out)


def declared(name: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``(version, file digests)`` of built-in skill ``name`` (``KeyError`` if unknown)."""
    return SKILL_VERSIONS[name], _file_digests(name)
