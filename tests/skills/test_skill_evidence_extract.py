"""evidence_extract: fetch once, extract, merge KB facts, rank, bounded follow-up round.

Also home of :class:`FakeTools`, a ToolCaller over in-memory documents that enforces
fetch-before-extract like the real runtime, and of the demo-corpus helpers the
end-to-end demo test uses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from claimfsm.skills.analysis.text import keywords, stem
from claimfsm.skills.context import SkillContext, ToolCall
from claimfsm.skills.evidence_extract import SKILL, handler

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ST = {"sid": "A1", "rev": 7, "fsm": "EXTRACT"}


def split_sentences(text: str) -> list[str]:
    """Sentences of a document (split after . ! ? followed by a space)."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def overlap(q: str, text: str) -> int:
    """How many of the query's keyword stems occur in ``text``."""
    have = {stem(w) for w in keywords(text)}
    return sum(1 for w in keywords(q) if stem(w) in have)


class FakeTools:
    """A ToolCaller over ``{doc_id: {title, source, text}}``.

    ``sentence_extract`` is denied for a document not fetched first, as the runtime
    does; ``fail`` maps ``(tool, doc_id)`` to an error code to simulate failures.
    """

    def __init__(
        self, docs: Mapping[str, Mapping[str, str]],
        fail: Mapping[tuple[str, str], str] | None = None,
        malformed: frozenset[str] = frozenset(),
    ) -> None:
        self.docs = docs
        self.fail = dict(fail or {})
        self.malformed = malformed
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fetched: set[str] = set()

    def _error(self, tool: str, args: dict[str, Any], code: str) -> ToolCall:
        return ToolCall(id=f"t{len(self.calls)}", tool=tool, args=args, ok=False,
                        code=code, message=f"{tool} failed: {code}")

    def _rank(self, a: dict[str, Any]) -> ToolCall:
        # Like the index: known documents by how many query keywords they hold, ties in
        # the given order; unknown ones left out.
        if ("rank", "*") in self.fail:
            return self._error("rank", a, self.fail[("rank", "*")])
        ids = [d for d in dict.fromkeys(a["doc_ids"]) if d in self.docs]
        scored = sorted(((overlap(str(a["q"]), self.docs[d]["title"] + " " + self.docs[d]["text"]),
                          n, d) for n, d in enumerate(ids)), key=lambda p: (-p[0], p[1]))
        value = {"ranked": [{"doc_id": d, "score": float(k)} for k, _, d in scored]}
        return ToolCall(id=f"t{len(self.calls)}", tool="rank", args=a, ok=True, value=value)

    def call(
        self, tool: str, args: Mapping[str, Any], *, call_id: str | None = None,
        key: str | None = None,
    ) -> ToolCall:
        a = dict(args)
        self.calls.append((tool, a))
        if tool == "rank":
            return self._rank(a)
        doc_id = str(a["doc_id"])
        if (tool, doc_id) in self.fail:
            return self._error(tool, a, self.fail[(tool, doc_id)])
        if doc_id not in self.docs:
            return self._error(tool, a, "NOT_FOUND")
        doc = self.docs[doc_id]
        value: dict[str, Any]
        if tool == "page_fetch":
            self.fetched.add(doc_id)
            value = {"doc_id": doc_id, "title": doc["title"], "source": doc["source"],
                     "text": doc["text"]}
        elif tool == "sentence_extract":
            if doc_id not in self.fetched:
                return self._error(tool, a, "POLICY_DENIED")
            if doc_id in self.malformed:
                value = {"doc_id": doc_id, "sentences": "oops"}
            else:
                scored = [(overlap(str(a["q"]), s), i, s)
                          for i, s in enumerate(split_sentences(doc["text"]))]
                best = sorted((p for p in scored if p[0] > 0), key=lambda p: (-p[0], p[1]))
                value = {"doc_id": doc_id, "sentences": [
                    {"id": f"{doc_id}#{i}", "idx": i, "text": s, "score": float(n)}
                    for n, i, s in best[: int(a["lim"])]]}
        else:
            return self._error(tool, a, "UNKNOWN_TOOL")
        return ToolCall(id=f"t{len(self.calls)}", tool=tool, args=a, ok=True, value=value)


def load_demo() -> tuple[dict[str, dict[str, str]], list[dict[str, str]]]:
    """The demo corpus: documents by id, and the knowledge-base facts."""
    docs: dict[str, dict[str, str]] = {}
    for line in (FIXTURES / "corpus" / "demo_docs.jsonl").read_text().splitlines():
        d = json.loads(line)
        docs[d["id"]] = d
    kb = [json.loads(x) for x in (FIXTURES / "corpus" / "demo_kb.jsonl").read_text().splitlines()]
    return docs, kb


def keyword_hits(
    sid: str, claim: str, docs: Mapping[str, Mapping[str, str]], k: int = 3
) -> list[dict[str, Any]]:
    """A simple keyword retrieval: documents ranked by claim keywords they contain."""
    scored = [(overlap(claim, d["title"] + " " + d["text"]), doc_id)
              for doc_id, d in docs.items()]
    best = sorted((p for p in scored if p[0] > 0), key=lambda p: (-p[0], p[1]))[:k]
    return [{"for": sid, "doc_id": doc_id, "title": docs[doc_id]["title"],
             "source": docs[doc_id]["source"], "score": float(n)} for n, doc_id in best]


def kb_facts(sid: str, claim: str, kb: list[dict[str, str]], k: int = 3) -> list[dict[str, Any]]:
    """Facts sharing at least two claim keywords, best first."""
    scored = [(overlap(claim, " ".join((f["subject"], f["relation"], f["object"]))), n)
              for n, f in enumerate(kb)]
    best = sorted((p for p in scored if p[0] >= 2), key=lambda p: (-p[0], p[1]))[:k]
    return [{"for": sid, **kb[n]} for _, n in best]


# --------------------------------------------------------------------------- tests

DOCS = {
    "d1": {"title": "Apollo 11", "source": "wiki",
           "text": "Apollo 11 landed on the Moon in 1969. The crew returned to Earth."},
    "d2": {"title": "Moon", "source": "news",
           "text": "The Moon orbits the Earth. NASA landed astronauts on the Moon."},
    "d3": {"title": "Mars", "source": "web", "text": "Mars is red. Mars has two moons."},
}


def _inp(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "claims": [{"id": "s1", "c": "NASA landed on the Moon in 1969."}],
        "hits": [{"for": "s1", "doc_id": "d1", "title": "Apollo 11", "source": "wiki",
                  "score": 2.0},
                 {"for": "s1", "doc_id": "d2", "title": "Moon", "source": "news",
                  "score": 1.0}],
        "facts": [],
        "rank": True,
        "st": ST,
    }
    base.update(over)
    return base


def test_extracts_and_ranks_evidence_then_moves_to_verify() -> None:
    tools = FakeTools(DOCS)
    env = SKILL.run(_inp(), SkillContext(tools=tools))
    assert env.s == "ok" and env.sp is not None
    assert (env.sp.rev, env.sp.fsm) == (8, "VERIFY")
    items = env.data["evidence"]["s1"]
    assert [e["id"] for e in items][:2] == ["d2#1", "d1#0"]
    assert items[0]["score"] >= items[1]["score"] > 0
    assert {e["source"] for e in items} == {"wiki", "news"}
    assert env.data["missing"] == [] and env.data["skipped"] == []
    assert list(env.d or {})[-1] == "sp"


def test_fetches_before_extracting_and_each_doc_once() -> None:
    tools = FakeTools(DOCS)
    claims = [{"id": "s1", "c": "NASA landed on the Moon."},
              {"id": "s2", "c": "Apollo 11 landed in 1969."}]
    hits = [{"for": "s1", "doc_id": "d1"}, {"for": "s1", "doc_id": "d2"},
            {"for": "s2", "doc_id": "d1"}, {"for": "s2", "doc_id": "d1"}]
    env = SKILL.run(_inp(claims=claims, hits=hits), SkillContext(tools=tools))
    assert env.s == "ok"
    fetches = [a["doc_id"] for t, a in tools.calls if t == "page_fetch"]
    # s1's rank call puts d2 (NASA, landed, Moon) before d1 (landed, Moon)
    assert fetches == ["d2", "d1"]
    for n, (tool, args) in enumerate(tools.calls):
        if tool == "sentence_extract":
            assert ("page_fetch", args["doc_id"]) in {(t, a.get("doc_id"))
                                                      for t, a in tools.calls[:n]}
    extracts = [(a["doc_id"], a["q"]) for t, a in tools.calls if t == "sentence_extract"]
    assert ("d1", "Apollo 11 landed in 1969.") in extracts
    assert env.data["evidence"]["s2"][0]["id"] == "d1#0"
    assert env.data["skipped"] == []


def test_docs_per_claim_limits_fetches_in_rank_order() -> None:
    tools = FakeTools(DOCS)
    hits = [{"for": "s1", "doc_id": d} for d in ("d2", "d1", "d3")]
    SKILL.run(_inp(hits=hits, docs_per_claim=2), SkillContext(tools=tools))
    assert [a["doc_id"] for t, a in tools.calls if t == "page_fetch"] == ["d2", "d1"]


def test_without_rank_the_best_scored_hits_across_searches_are_fetched_first() -> None:
    tools = FakeTools(DOCS, fail={("rank", "*"): "UNKNOWN_TOOL"})
    hits = [{"for": "s1", "doc_id": "d3", "source": "wiki", "score": 3.0},
            {"for": "s1", "doc_id": "d1", "source": "wiki", "score": 2.0},
            {"for": "s1", "doc_id": "d2", "source": "web", "score": 5.0},
            {"for": "s1", "doc_id": "d3", "source": "web", "score": 4.0}]
    env = SKILL.run(_inp(hits=hits, docs_per_claim=2), SkillContext(tools=tools))
    assert [a["doc_id"] for t, a in tools.calls if t == "page_fetch"] == ["d2", "d3"]
    assert env.data["skipped"] == [{"doc_id": "", "tool": "rank", "code": "UNKNOWN_TOOL"}]


def test_the_whole_candidate_pool_is_ranked_against_the_subclaim_before_reading() -> None:
    tools = FakeTools(DOCS)
    # d3 has the best hit score but shares nothing with the subclaim; rank reorders the
    # pool so the two documents read are the relevant ones (a tie keeps hit order).
    hits = [{"for": "s1", "doc_id": "d3", "score": 9.0},
            {"for": "s1", "doc_id": "d2", "score": 2.0},
            {"for": "s1", "doc_id": "d1", "score": 1.0}]
    env = SKILL.run(_inp(hits=hits, docs_per_claim=2), SkillContext(tools=tools))
    rank_calls = [a for t, a in tools.calls if t == "rank"]
    assert rank_calls == [{"q": "NASA landed on the Moon in 1969.",
                           "doc_ids": ["d3", "d2", "d1"], "lim": 200}]
    assert tools.calls[0][0] == "rank"
    assert [a["doc_id"] for t, a in tools.calls if t == "page_fetch"] == ["d2", "d1"]
    items = env.data["evidence"]["s1"]
    assert {e["doc_id"] for e in items} == {"d1", "d2"}
    ranks = [e["rank"] for e in items]
    assert ranks == sorted(ranks, reverse=True) and ranks[0] > 0


def test_failed_calls_skip_the_document_and_are_noted() -> None:
    tools = FakeTools(DOCS, fail={("page_fetch", "d1"): "TIMEOUT",
                                  ("sentence_extract", "d2"): "RATE_LIMITED"})
    hits = [{"for": "s1", "doc_id": d} for d in ("d1", "d2", "d9")]
    env = SKILL.run(_inp(hits=hits), SkillContext(tools=tools))
    assert env.s == "ok"
    assert env.data["evidence"]["s1"] == []
    assert env.data["missing"] == ["s1"]
    assert env.data["skipped"] == [
        {"doc_id": "d1", "tool": "page_fetch", "code": "TIMEOUT"},
        {"doc_id": "d2", "tool": "sentence_extract", "code": "RATE_LIMITED"},
        {"doc_id": "d9", "tool": "page_fetch", "code": "NOT_FOUND"},
    ]
    # d1 failed to fetch, so it was never asked for sentences
    assert ("sentence_extract", "d1") not in {(t, a.get("doc_id")) for t, a in tools.calls}


def test_a_failed_fetch_is_not_retried_for_another_subclaim() -> None:
    tools = FakeTools(DOCS, fail={("page_fetch", "d1"): "TIMEOUT"})
    claims = [{"id": "s1", "c": "Apollo 11 landed."}, {"id": "s2", "c": "Moon landing 1969"}]
    hits = [{"for": "s1", "doc_id": "d1"}, {"for": "s2", "doc_id": "d1"}]
    env = SKILL.run(_inp(claims=claims, hits=hits), SkillContext(tools=tools))
    assert [t for t, _ in tools.calls if t != "rank"] == ["page_fetch"]
    assert env.data["skipped"] == [{"doc_id": "d1", "tool": "page_fetch", "code": "TIMEOUT"}]


def test_malformed_tool_answer_is_a_skipped_document() -> None:
    tools = FakeTools(DOCS, malformed=frozenset({"d1"}))
    env = SKILL.run(_inp(), SkillContext(tools=tools))
    assert env.s == "ok"
    assert {"doc_id": "d1", "tool": "sentence_extract", "code": "BAD_TOOL_RESULT"} in (
        env.data["skipped"])
    assert all(e["doc_id"] == "d2" for e in env.data["evidence"]["s1"])


def test_kb_facts_merge_as_sentences_and_rank_with_documents() -> None:
    facts = [{"for": "s1", "id": "kb-1", "subject": "NASA", "relation": "landed_on_the_Moon_in",
              "object": "1969", "source": "kb"},
             {"for": "s2", "id": "kb-2", "subject": "x", "relation": "y", "object": "z"}]
    env = SKILL.run(_inp(hits=[], facts=facts), SkillContext(tools=FakeTools(DOCS)))
    assert env.data["evidence"]["s1"] == [
        {"id": "kb-1", "doc_id": "kb-1", "text": "NASA landed on the Moon in 1969",
         "source": "kb", "score": 1.0, "rank": 0.095238}]


def test_per_claim_keeps_the_best_with_deterministic_ties() -> None:
    docs = {f"e{n}": {"title": "t", "source": "web", "text": "Moon landing here."}
            for n in range(4)}
    hits = [{"for": "s1", "doc_id": f"e{n}"} for n in range(4)]
    inp = _inp(claims=[{"id": "s1", "c": "Moon landing"}], hits=hits, per_claim=2,
               docs_per_claim=4)
    env = SKILL.run(inp, SkillContext(tools=FakeTools(docs)))
    assert [e["id"] for e in env.data["evidence"]["s1"]] == ["e0#0", "e1#0"]


def test_irrelevant_sentences_are_dropped() -> None:
    docs = {"z": {"title": "t", "source": "web", "text": "Moon cheese. Totally unrelated."}}
    tools = FakeTools(docs)
    env = SKILL.run(_inp(claims=[{"id": "s1", "c": "Moon cheese"}],
                         hits=[{"for": "s1", "doc_id": "z"}]), SkillContext(tools=tools))
    assert [e["text"] for e in env.data["evidence"]["s1"]] == ["Moon cheese."]


def test_missing_evidence_asks_for_one_follow_up_round_only() -> None:
    claims = [{"id": "s1", "c": "NASA landed on the Moon in 1969."},
              {"id": "s2", "c": "Pluto has oceans of lemonade."}]
    first = SKILL.run(_inp(claims=claims), SkillContext(tools=FakeTools(DOCS)))
    assert first.data["missing"] == ["s2"]
    assert first.sp is not None and first.sp.fsm == "RETRIEVAL"
    second = SKILL.run(_inp(claims=claims, round=1), SkillContext(tools=FakeTools(DOCS)))
    assert second.sp is not None and second.sp.fsm == "VERIFY"
    assert second.data["missing"] == ["s2"]
    none = SKILL.run(_inp(claims=claims, max_rounds=0), SkillContext(tools=FakeTools(DOCS)))
    assert none.sp is not None and none.sp.fsm == "VERIFY"


def test_error_codes() -> None:
    env = SKILL.run(_inp(claims=[]), SkillContext(tools=FakeTools(DOCS)))
    assert (env.s, env.e and env.e.code, env.rb) == ("error", "NO_CLAIMS", "tools")
    assert env.e is not None and "claims" in env.e.msg
    env = SKILL.run(_inp(), SkillContext(tools=None))
    assert env.e is not None and env.e.code == "TOOLS_UNAVAILABLE" and env.rb == "tools"
    dup = [{"id": "s1", "c": "a b"}, {"id": "s1", "c": "c d"}]
    env = SKILL.run(_inp(claims=dup), SkillContext(tools=FakeTools(DOCS)))
    assert env.e is not None and env.e.code == "DUPLICATE_CLAIM"
    env = SKILL.run(_inp(per_claim=0), SkillContext(tools=FakeTools(DOCS)))
    assert env.e is not None and env.e.code == "BAD_INPUT" and "per_claim" in env.e.msg
    env = SKILL.run(_inp(hits=[{"doc_id": "d1"}]), SkillContext(tools=FakeTools(DOCS)))
    assert env.e is not None and env.e.code == "BAD_INPUT" and "hits.0.for" in env.e.msg


def test_same_input_gives_identical_bytes() -> None:
    a = SKILL.run(_inp(), SkillContext(tools=FakeTools(DOCS)))
    b = SKILL.run(_inp(), SkillContext(tools=FakeTools(DOCS)))
    assert a.to_json() == b.to_json()


def test_handler_is_the_skill_handler() -> None:
    assert SKILL.handler is handler and SKILL.rb_on_error == "tools"
    assert SKILL.name == "evidence_extract"


def card_example(name: str) -> tuple[str, str]:
    """The Input and Output JSON of a skill card's "Example I/O" section."""
    text = (FIXTURES.parent / "skills" / "cards" / f"{name}.md").read_text()
    section = text.split("## Example I/O", 1)[1]
    raw_in, raw_out = (b.split("```", 1)[0].strip() for b in section.split("```json")[1:3])
    return raw_in, raw_out


def test_card_example_is_what_the_skill_answers() -> None:
    raw_in, raw_out = card_example("evidence_extract")
    docs = {"apollo-11": {"title": "Apollo 11", "source": "wiki", "text": (
        "Apollo 11 was the NASA mission that first landed people on the Moon. "
        "NASA landed the lunar module Eagle on the Moon on 20 July 1969.")}}
    env = SKILL.run(raw_in, SkillContext(tools=FakeTools(docs)))
    assert env.to_json().decode() == raw_out


def test_thin_evidence_below_min_best_also_asks_for_the_follow_up_round() -> None:
    # No sentence mentions the rover: the best one covers the claim only in part.
    claims = [{"id": "s1", "c": "NASA landed a rover on the Moon in 1969."}]
    default = SKILL.run(_inp(claims=claims), SkillContext(tools=FakeTools(DOCS)))
    best = default.data["evidence"]["s1"][0]["score"]
    assert 0 < best < 1 and default.data["missing"] == [] and default.sp is not None
    assert default.sp.fsm == "VERIFY"
    thin = SKILL.run(_inp(claims=claims, min_best=best + 0.01),
                     SkillContext(tools=FakeTools(DOCS)))
    assert thin.data["missing"] == ["s1"] and thin.sp is not None
    assert thin.sp.fsm == "RETRIEVAL"
    assert thin.data["evidence"] == default.data["evidence"]  # the evidence is kept
    enough = SKILL.run(_inp(claims=claims, min_best=best), SkillContext(tools=FakeTools(DOCS)))
    assert enough.data["missing"] == []


class DenseTools(FakeTools):
    """A rank tool that reports dense similarity and puts ``first`` at the top."""

    def __init__(self, docs: Mapping[str, Mapping[str, str]], first: str) -> None:
        super().__init__(docs)
        self.first = first

    def _rank(self, a: dict[str, Any]) -> ToolCall:
        ids = [self.first, *[d for d in a["doc_ids"] if d != self.first]]
        value = {"ranked": [{"doc_id": d, "score": float(len(ids) - n)}
                            for n, d in enumerate(ids)], "dense": True}
        return ToolCall(id=f"t{len(self.calls)}", tool="rank", args=a, ok=True, value=value)


def test_a_dense_ranked_pool_orders_evidence_by_document_rank() -> None:
    hits = [{"for": "s1", "doc_id": d} for d in ("d1", "d2", "d3")]
    dense = SKILL.run(_inp(hits=hits), SkillContext(tools=DenseTools(DOCS, "d3")))
    ids = [e["id"] for e in dense.data["evidence"]["s1"]]
    # d3 covers the subclaim least, yet the dense pool ranking put it first
    assert ids[0].startswith("d3#")
    lexical = SKILL.run(_inp(hits=hits), SkillContext(tools=FakeTools(DOCS)))
    assert lexical.data["evidence"]["s1"][0]["doc_id"] != "d3"
