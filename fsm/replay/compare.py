"""One replayed step set against its record line: the :class:`Divergence` each kind of
difference makes, and the chain hashes of the replayed revisions against the lines' ``h``.

Its own module because it is the replay's judgement, apart from the running of it
(:mod:`claimfsm.replay.runner` drives the session and calls these for every line): what
counts as a divergence, in which order the fields are compared, and what each names.
"""

from __future__ import annotations

from typing import Any

from claimfsm.engine.driver import StepResult
from claimfsm.replay.diff import first_diff
from claimfsm.replay.record import Step
from claimfsm.replay.report import Divergence
from claimfsm.replay.seal import HashChain
from claimfsm.replay.tools import RecordedTools
from claimfsm.skills.envelope import dumps
from claimfsm.state.model import Revision

__all__ = ["Chain", "compare_step", "divergence_at"]


def divergence_at(n: int, head: Revision, skill: str | None, kind: str, path: str,
                  expected: Any, actual: Any) -> Divergence:
    """The divergence at record line ``n`` (step ``n - 1``), from the state ``head``."""
    return Divergence(step=n - 1, line=n, state=head.fsm, skill=skill, kind=kind, path=path,
                      expected=expected, actual=actual)


def compare_step(n: int, head: Revision, entry: Step, result: StepResult,
                 recorded: RecordedTools | None, *, strict: bool) -> Divergence | None:
    """The first difference between the step line ``entry`` and the replayed ``result``
    (``strict``: a recorded call left unmade is one too), or ``None``."""
    # What the line says the step was: its state and skill are the replay's own.
    for field, said, did in (("before", entry.before, head.fsm),
                             ("skill", entry.skill, result.skill)):
        if said != did:
            return divergence_at(n, head, entry.skill, "STEP_MISMATCH", field, said, did)
    # The input first: a binding that builds it differently is the cause of whatever
    # follows, so it is the divergence to report.
    if dumps(entry.input) != dumps(result.input):
        found = first_diff(entry.input, result.input, "input")
        path, exp, act = found if found is not None else ("input", entry.input, result.input)
        return divergence_at(n, head, entry.skill, "INPUT_MISMATCH", path, exp, act)
    if recorded is not None and recorded.unrecorded:
        miss = recorded.unrecorded[0]
        exp = None if miss.expected is None else {"tool": miss.expected.tool,
                                                  "args": miss.expected.args}
        return divergence_at(n, head, entry.skill, "UNRECORDED_TOOL_CALL", f"calls[{miss.index}]",
                    exp, miss.call)
    actual_bytes = result.envelope.to_json()
    if dumps(entry.envelope) != actual_bytes:
        found = first_diff(entry.envelope, result.envelope.to_dict())
        path, exp, act = found if found is not None else ("(root)", entry.envelope,
                                                          result.envelope.to_dict())
        return divergence_at(n, head, entry.skill, "ENVELOPE_MISMATCH", path, exp, act)
    if strict and recorded is not None and recorded.queue:
        left = recorded.queue[0]
        return divergence_at(n, head, entry.skill, "MISSING_TOOL_CALL", f"calls[{recorded.made}]",
                    {"tool": left.tool, "args": left.args}, None)
    if result.committed != entry.committed or result.after != entry.after:
        return divergence_at(n, head, entry.skill, "COMMIT_MISMATCH", "after",
                    f"{entry.after} (committed={entry.committed})",
                    f"{result.after} (committed={result.committed})")
    rev = result.revision
    if rev is not None:
        for name, line_value, value in (("policy", entry.policy, rev.state.policy),
                                        ("runtime", entry.runtime, rev.state.runtime)):
            if line_value is not None and dumps(line_value) != dumps(value):
                found = first_diff(line_value, value, name)
                path, exp, act = found if found is not None else (name, line_value, value)
                return divergence_at(n, head, entry.skill, "STATE_MISMATCH", path, exp, act)
    return None


class Chain:
    """The chain hashes of the replayed revisions against the record's ``h`` (format 2,
    strict and tools mode; live tools make other events, so another chain)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.hashes = HashChain()

    def check(self, n: int, head: Revision, rev: Revision, h: str | None,
              skill: str | None) -> Divergence | None:
        if not self.on or h is None:
            return None
        actual = self.hashes.add(rev)
        if actual == h:
            return None
        self.on = False  # one chain broken: the later hashes all differ
        return divergence_at(n, head, skill, "HASH_MISMATCH", "h", h, actual)
