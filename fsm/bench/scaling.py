"""How each skill's time grows with its input: the same input at 1x and 8x size, and the
largest input the documented limits allow. ``python -m claimfsm.bench.scaling [--json FILE]``
(``make bench-scaling``).

A linear skill takes about 8x as long on an 8x input; the goal is a ratio of at most 16
(a quadratic one would be near 64). Times are CPU seconds, best of three: a measurement
in the benchmark, never an assertion in a test.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.limits import (
    MAX_CLAIM_CHARS,
    MAX_EVIDENCE_PER_CLAIM,
    MAX_INPUT_BYTES,
    MAX_SENTENCE_CHARS,
    MAX_SUBCLAIMS,
)
from claimfsm.skills.registry import all_skills

__all__ = ["GOAL_RATIO", "GOAL_WORST_S", "cases", "measure", "run"]

GOAL_RATIO = 16.0
GOAL_WORST_S = 2.0
ST = {"sid": "bench", "rev": 3, "fsm": "VERIFY"}
SENTENCE = ("In 1969 NASA landed 2 astronauts on the Moon, 384,400 km away, and about 97% "
            "of the world followed the landing on radio or television. ")
CLAIM = "NASA landed on the Moon in 1969 and the Eiffel Tower is in Paris"


def _claims(n: int, chars: int) -> list[dict[str, str]]:
    text = (CLAIM + " ") * (chars // len(CLAIM) + 1)
    return [{"id": f"s{i}", "c": text[:chars]} for i in range(1, n + 1)]


def _evidence(claims: list[dict[str, str]], per: int, chars: int) -> dict[str, Any]:
    text = (SENTENCE * (chars // len(SENTENCE) + 1))[:chars]
    return {c["id"]: [{"id": f"d{i}#0", "doc_id": f"d{i}", "text": text, "source": "wiki",
                       "score": 1.0} for i in range(per)] for c in claims}


def cases(scale: int) -> dict[str, dict[str, Any]]:
    """One input per skill, its size proportional to ``scale`` (1 to 8 stays in limits)."""
    # The judge compares each claim with each sentence: grow the evidence, not both sides.
    claims = _claims(2, 60)
    evidence = _evidence(claims, 4 * scale, 200)
    judgments = [{"id": c["id"], "verdict": "SUPPORTS", "confidence": 0.9, "cites": [],
                  "reasons": ["x"] * scale} for c in claims]
    return {
        "parse_claim": {"claim": ("the very " * 10 * scale) + CLAIM + " and it rained",
                        "st": ST},
        "evidence_query_plan": {"claims": _claims(2 * scale, 100), "st": ST},
        "stance_judge": {"claims": claims, "evidence": evidence, "st": ST},
        "verdict_aggregate": {"claims": claims, "judgments": judgments,
                              "evidence": evidence, "st": ST},
        "tool_request_compose": {"plans": [{"id": f"s{i}", "q": [CLAIM[:60]] * 2,
                                            "src": ["wiki", "web"], "lim": 4}
                                           for i in range(1, 2 * scale + 1)], "st": ST},
    }


def worst() -> dict[str, dict[str, Any]]:
    """The largest inputs the limits allow, for the skills whose cost grows with text."""
    claims = _claims(MAX_SUBCLAIMS, MAX_CLAIM_CHARS)
    # Fill the byte budget with every claim's evidence: sentences of 200 characters (about
    # 300 bytes with their JSON), as many as the limits let in.
    chars = 200
    per = min(MAX_EVIDENCE_PER_CLAIM, (MAX_INPUT_BYTES - 40_000) // (MAX_SUBCLAIMS * 300))
    return {
        "parse_claim": {"claim": (("the very " * 12 + CLAIM + " and ") * 12)[:MAX_CLAIM_CHARS],
                        "st": ST},
        "evidence_query_plan": {"claims": claims, "st": ST},
        "stance_judge": {"claims": claims, "evidence": _evidence(claims, per, chars), "st": ST},
        "stance_judge long sentences": {
            "claims": claims, "st": ST,
            "evidence": _evidence(claims, 1, min(MAX_SENTENCE_CHARS,
                                                 (MAX_INPUT_BYTES - 40_000) // MAX_SUBCLAIMS))},
    }


def measure(name: str, inp: dict[str, Any], repeat: int = 3) -> tuple[float, str]:
    """Best CPU seconds of ``repeat`` runs of skill ``name`` on ``inp``, and its status."""
    skill = all_skills()[name]
    raw = orjson.dumps(inp)
    best, status = float("inf"), ""
    for _ in range(repeat):
        ctx = SkillContext(clock=FixedClock())
        t0 = time.process_time()
        env = skill.run(raw, ctx)
        best = min(best, time.process_time() - t0)
        status = env.s if env.e is None else f"{env.s} {env.e.code}"
    return best, status


def run(out: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure every case; print a table; return the figures."""
    small, large = cases(1), cases(8)
    report: dict[str, Any] = {"ratio": {}, "worst_s": {}}
    out(f"{'skill':<22}{'1x s':>10}{'8x s':>10}{'ratio':>8}  goal <= {GOAL_RATIO:g}")
    for name in small:
        t1, s1 = measure(name, small[name])
        t8, s8 = measure(name, large[name])
        ratio = t8 / max(t1, 1e-6)
        report["ratio"][name] = round(ratio, 2)
        mark = "ok" if ratio <= GOAL_RATIO else "MISSED"
        out(f"{name:<22}{t1:>10.5f}{t8:>10.5f}{ratio:>8.1f}  {mark} ({s1}; {s8})")
    out(f"\nlargest input within the limits (goal <= {GOAL_WORST_S:g} s)")
    for name, inp in worst().items():
        t, status = measure(name.split()[0], inp, repeat=1)
        report["worst_s"][name] = round(t, 3)
        out(f"{name:<22}{t:>10.3f} s  {'ok' if t <= GOAL_WORST_S else 'MISSED'} ({status}, "
            f"{len(orjson.dumps(inp)):,} bytes)")
    return report


if __name__ == "__main__":  # pragma: no cover - the benchmark's entry point
    figures = run()
    if len(sys.argv) == 3 and sys.argv[1] == "--json":
        with open(sys.argv[2], "wb") as fh:
            fh.write(orjson.dumps(figures, option=orjson.OPT_INDENT_2))
