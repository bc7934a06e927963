"""The public custom-machine API: the docs/api.md example runs as written, the benchmark
uses exactly that code, and a custom machine gets the store, rollback, fork, fsck and
replay of the engine.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from claimfsm.bench.workflow import PIPELINE
from claimfsm.engine.api import MemoryInput, define_machine, linear, memory_skill_binding, skill
from claimfsm.engine.bindings import Binding
from claimfsm.engine.errors import MachineDefinitionError
from claimfsm.engine.machine import RetryPolicy
from claimfsm.replay import replay_record
from claimfsm.replay.write import export_record
from claimfsm.skills.context import FixedClock, SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.state.fsck import fsck
from claimfsm.state.memory import MemoryStore
from claimfsm.state.model import SessionState
from claimfsm.state.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")


def _doc_block(tag: str) -> str:
    found = re.search(rf"<!-- api-example: {tag} -->\n```python\n(.*?)```", DOC, re.S)
    assert found, f"docs/api.md has no {tag!r} example"
    return found.group(1)


def test_the_doc_example_is_the_benchmark_workflow_verbatim() -> None:
    source = (ROOT / "fsm" / "bench" / "workflow.py").read_text(encoding="utf-8")
    bench = source.split("# --- api.md: begin ---\n")[1].split("# --- api.md: end ---")[0]
    assert _doc_block("machine") == bench
    assert len(bench.strip().splitlines()) <= 26  # "about 20 lines"


def test_the_doc_examples_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(_doc_block("machine"), "api.md:machine", "exec"), namespace)
    exec(compile(_doc_block("usage"), "api.md:usage", "exec"), namespace)
    assert namespace["PIPELINE"].definition.names == (
        "FETCH", "CLEAN", "SCORE", "RANK", "REPORT", "PUBLISH", "DONE")
    with SQLiteStore(tmp_path / "pipeline.db") as store:
        assert len(store.sessions()) == 2 and fsck(store).ok


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_pipeline_runs_rewinds_forks_and_survives_a_reopen(backend: str, tmp_path: Path) -> None:
    store = MemoryStore() if backend == "memory" else SQLiteStore(tmp_path / "p.db")
    with store:
        driver = PIPELINE.driver(store, clock=FixedClock(tick=timedelta(seconds=1)))
        sid = driver.start("batch 7").sid
        assert [driver.step(sid).after for _ in range(3)] == ["CLEAN", "SCORE", "RANK"]
        assert store.head(sid).state.memory == {"n": 3}
        back = driver.rollback(sid, 1)
        assert (back.rev, back.fsm, back.state.memory) == (4, "CLEAN", {"n": 1})
        head = driver.run(sid)
        assert (head.fsm, head.rev, head.state.memory) == ("DONE", 9, {"n": 6})
        fork = driver.fork(sid, 2, "copy")
        # Revisions 0..2 copied, then the fork's own (same state, its parent recorded).
        assert [r.fsm for r in store.history("copy")] == ["FETCH", "CLEAN", "SCORE", "SCORE"]
        assert fork.state.sid == "copy" and fsck(store).ok
    if backend == "sqlite":
        with SQLiteStore(tmp_path / "p.db") as again:
            assert again.head(sid).state.memory == {"n": 6}
            resumed = PIPELINE.driver(again).run("copy")
            assert resumed.fsm == "DONE" and resumed.rev == 7
            assert fsck(again).ok


def test_replay_of_a_custom_machine_passes_then_catches_a_changed_skill() -> None:
    store = MemoryStore()
    driver = PIPELINE.driver(store, clock=FixedClock(tick=timedelta(seconds=1)))
    sid = driver.run(driver.start("x").sid).sid
    record = export_record(store, sid, tools=None, bindings=PIPELINE.bindings,
                           machine="pipeline", finals=PIPELINE.definition.finals)
    machine = PIPELINE.definition
    report = replay_record(record, "strict", machine=machine, bindings=PIPELINE.bindings)
    assert report.ok and report.steps == 6 and report.actual.fsm == "DONE"

    @skill("rank")
    def rank_twice(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        return inp.ok("REPORT", n=inp.memory["n"] + 2)  # a "fixed" skill that differs

    changed = {**PIPELINE.bindings, "rank": memory_skill_binding(rank_twice)}
    report = replay_record(record, "strict", machine=machine, bindings=changed)
    assert not report.ok and report.divergence is not None
    assert (report.divergence.kind, report.divergence.state) == ("ENVELOPE_MISMATCH", "RANK")
    assert report.divergence.path.endswith("n")


def test_skills_see_claim_config_and_memory_and_failures_roll_back() -> None:
    seen: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    @skill()
    def fetch(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        seen.append((inp.claim, inp.config, inp.memory))
        return inp.ok("CHECK", rows=inp.config["rows"])

    @skill()
    def check(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        if inp.memory.get("fixed"):
            return inp.ok("DONE", checked=True)
        return inp.error("BAD_ROWS", "rows: not sorted", rb="state")

    wf = define_machine(
        "check", states={"FETCH": fetch, "CHECK": check, "DONE": None, "FAILED": None},
        transitions=[("FETCH", "CHECK"), ("CHECK", "DONE"), ("FETCH", "FAILED"),
                     ("CHECK", "FAILED")],
        failure="FAILED",
    )
    assert fetch.name == "fetch" and wf.definition.state("CHECK").skill == "check"
    driver = wf.driver(MemoryStore())
    head = driver.run(driver.start("load", config={"rows": 3}).sid)
    assert seen == [("load", {"rows": 3}, {})]
    assert head.fsm == "FAILED" and head.state.error == {"code": "BAD_ROWS",
                                                         "msg": "rows: not sorted"}
    assert head.state.memory == {"rows": 3}  # rb=state: back to the state on entering CHECK
    assert head.events[0]["type"] == "Rollback"


def test_retry_policies_apply_to_custom_states() -> None:
    answers = [Envelope.retry("BUSY", "try later"), None]

    @skill()
    def poll(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        answer = answers.pop(0)
        return answer if answer is not None else inp.ok("DONE", polled=True)

    wf = define_machine("poll", states={"POLL": poll, "DONE": None, "FAILED": None},
                        transitions=[("POLL", "DONE"), ("POLL", "FAILED")], failure="FAILED",
                        retry={"POLL": RetryPolicy(max_attempts=3, backoff_s=5)})
    slept: list[float] = []
    clock = FixedClock()

    def sleep(s: float) -> None:
        slept.append(s)
        clock.advance(timedelta(seconds=s))

    driver = wf.driver(MemoryStore(), clock=clock, sleep=sleep)
    head = driver.run(driver.start("x").sid)
    assert head.fsm == "DONE" and slept == [5.0] and head.rev == 2


def test_an_undeclared_move_commits_nothing() -> None:
    @skill()
    def jump(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        return inp.ok("END")

    wf = define_machine("j", states={"A": jump, "B": jump, "END": None},
                        transitions=linear(["A", "B"], end="END"))
    driver = wf.driver(MemoryStore())
    sid = driver.start("x").sid
    result = driver.step(sid)
    assert not result.committed and result.envelope.e is not None
    assert result.envelope.e.code == "ILLEGAL_TRANSITION"
    assert driver.store.head(sid).rev == 0


def test_a_binding_maps_a_skill_onto_other_state_fields() -> None:
    @skill()
    def plan(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        return inp.ok("DONE", plans=[{"id": "p1"}])

    def apply(state: SessionState, d: dict[str, Any], to: str) -> SessionState:
        return state.model_copy(update={"plans": d["plans"]})

    base = memory_skill_binding(plan)
    wf = define_machine("b", states={"PLAN": Binding(plan, base.to_input, apply), "DONE": None},
                        transitions=[("PLAN", "DONE")])
    driver = wf.driver(MemoryStore())
    head = driver.run(driver.start("x").sid)
    assert head.state.plans == [{"id": "p1"}] and head.state.memory == {}


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"states": {"A": None}, "transitions": [], "retry": {"Z": RetryPolicy()}},
     "retry policy for unknown state 'Z'"),
    ({"states": {}, "transitions": []}, "no states"),
    ({"states": {"A": "same", "B": "same", "END": None},
      "transitions": [("A", "END"), ("B", "END")]}, "unreachable"),
    ({"states": {"A": "same", "END": None}, "transitions": [("A", "END"), ("END", "A")]},
     "final state END has outgoing transitions"),
])
def test_bad_definitions_are_refused_with_every_problem_named(kwargs: dict[str, Any],
                                                              fragment: str) -> None:
    @skill("same")
    def same(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        return inp.ok("END")

    # The parameters are shared by every run of the test in a process (mutmut runs it
    # twice): read them, never pop them.
    rest = {k: v for k, v in kwargs.items() if k != "states"}
    states = {k: (same if v == "same" else v) for k, v in kwargs["states"].items()}
    with pytest.raises(MachineDefinitionError) as info:
        define_machine("bad", states=states, **rest)
    assert info.value.code == "BAD_MACHINE" and fragment in info.value.msg


def test_two_different_skills_may_not_share_a_name() -> None:
    @skill("dup")
    def one(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        return inp.ok("B")

    @skill("dup")
    def two(inp: MemoryInput, ctx: SkillContext) -> Envelope:
        return inp.ok("END")

    with pytest.raises(MachineDefinitionError, match="two different skills are named 'dup'"):
        define_machine("d", states={"A": one, "B": two, "END": None},
                       transitions=linear(["A", "B"], end="END"))


def test_claimfsm_step_on_a_custom_machine_session_is_a_clean_error(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from claimfsm.cli.main import main

    db = tmp_path / "c.db"
    with SQLiteStore(db) as store:
        sid = PIPELINE.driver(store, clock=FixedClock()).start("batch 7").sid
    res = CliRunner().invoke(main, ["step", sid, "--db", str(db), "--json"])
    assert res.exit_code == 2 and not isinstance(res.exception, KeyError)
    assert '"code": "MACHINE_MISMATCH"' in res.output and "FETCH" in res.output


def test_the_run_after_a_fork_starts_warm(tmp_path: Path) -> None:
    """A fork leaves its revisions 0 (the machine version) and ``at + 1`` (its head)
    decoded: running it reads the head's number once and writes one row a step, decoding
    nothing from the file; what it commits verifies and reads back the same cold."""
    with SQLiteStore(tmp_path / "w.db") as store:
        driver = PIPELINE.driver(store, clock=FixedClock(tick=timedelta(seconds=1)))
        sid = driver.start("batch 7").sid
        driver.run(sid)
        store.clear_cache()
        store.get(sid, 3)  # as the side-by-side harness does before it forks
        fork = driver.fork(sid, 3)
        assert store._conn is not None
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        head = driver.run(fork.sid)
        store._conn.set_trace_callback(None)
        assert (head.fsm, head.rev, head.state.memory) == ("DONE", 7, {"n": 6})
        reads = [s for s in statements if s.startswith("SELECT")]
        writes = [s for s in statements if s.startswith("INSERT")]
        assert len(reads) == 1 and "max(k)" in reads[0], reads
        assert len(writes) == 3 and len(statements) == 4, statements
        assert fsck(store).ok
        with SQLiteStore(tmp_path / "w.db", readonly=True) as cold:
            assert [r.model_dump_json() for r in cold.history(fork.sid)] == [
                r.model_dump_json() for r in store.history(fork.sid)]
