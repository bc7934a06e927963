"""The batch input: one ``{"id", "claim"}`` object per line, checked before anything runs.

Each claim gets a session id derived from its id and text, so running the same file
again finds the sessions it started (a DONE one is skipped, a half-done one resumes).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict

from claimfsm.engine.errors import ClaimFsmError, ErrorCode, check_claim

__all__ = ["BatchClaim", "BatchInputError", "read_claims", "session_id"]

_SHOWN = 5  # problems named in the error message; the rest are counted


class BatchInputError(ClaimFsmError):
    """The claims file cannot be read or has bad lines (each named by line number)."""

    code = ErrorCode.BAD_CLAIMS


class BatchClaim(BaseModel):
    """One line of the input: the caller's ``id`` (kept as given) and the claim text."""

    model_config = ConfigDict(frozen=True, defer_build=True, extra="forbid")

    id: str | int
    claim: str

    @property
    def sid(self) -> str:
        """The session id of this claim (see :func:`session_id`)."""
        return session_id(self.id, self.claim)


def session_id(claim_id: str | int, claim: str) -> str:
    """``b`` + 20 hex digits of sha256 over the id and the text: the same line always
    maps to the same session, and an id reused for another text gets a new one.
    """
    digest = hashlib.sha256(orjson.dumps([claim_id, claim])).hexdigest()
    return f"b{digest[:20]}"


def _problem(line: int, value: object) -> str | None:
    if not isinstance(value, dict):
        return f"line {line}: not a JSON object"
    missing = [f for f in ("id", "claim") if f not in value]
    if missing:
        return f"line {line}: field {missing[0]!r} is missing"
    extra = sorted(set(value) - {"id", "claim"})
    if extra:
        return f"line {line}: unknown field {extra[0]!r} (fields: id, claim)"
    cid = value["id"]
    if isinstance(cid, bool) or not isinstance(cid, str | int) or cid == "":
        return f"line {line}: field 'id' must be a non-empty string or an integer"
    if not isinstance(value["claim"], str) or not value["claim"].strip():
        return f"line {line}: field 'claim' must be a non-empty string"
    try:
        check_claim(value["claim"])  # what the driver would refuse, refused up front
    except ClaimFsmError as exc:
        return f"line {line}: {exc.code}: {exc.msg}"
    return None


def read_claims(path: Path) -> list[BatchClaim]:
    """Every claim of ``path`` in file order; :class:`BatchInputError` naming the bad
    lines (bad JSON, a missing or mistyped field, a claim over the size limit, an id
    used twice) or an empty file.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BatchInputError(f"{path}: {exc.strerror or exc}", field="CLAIMS") from exc
    claims: list[BatchClaim] = []
    problems: list[str] = []
    seen: dict[str | int, int] = {}
    for number, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            problems.append(f"line {number}: not valid JSON")
            continue
        problem = _problem(number, value)
        if problem is None and value["id"] in seen:
            problem = f"line {number}: id {value['id']!r} already used on line {seen[value['id']]}"
        if problem is not None:
            problems.append(problem)
            continue
        seen[value["id"]] = number
        claims.append(BatchClaim(id=value["id"], claim=value["claim"]))
    if problems:
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise BatchInputError(f"{path}: " + "; ".join(problems[:_SHOWN]) + more,
                              field="CLAIMS")
    if not claims:
        raise BatchInputError(f"{path}: no claims (one {{\"id\", \"claim\"}} object per line)",
                              field="CLAIMS")
    return claims
