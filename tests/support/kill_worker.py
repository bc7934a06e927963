"""A child process for the resume tests (run: ``python -m tests.support.kill_worker ...``).

``python -m tests.support.kill_worker DB SID STOP BLOCK COUNTER RATE``

Opens the engine on the SQLite file ``DB`` and drives session ``SID`` (created with
:data:`CLAIM` if it does not exist) until it is final or its head reaches revision
``STOP`` (0: no stop), printing ``rev N`` after each committed step.

- Every tool invocation appends ``tool <args json>`` to the file ``COUNTER`` before the
  tool runs, so the parent can count what really ran, across processes.
- Invocation number ``BLOCK`` (0: none) prints ``blocked`` and then hangs, so the parent
  can SIGKILL the process in the middle of a RETRIEVAL step.
- ``RATE`` > 0 rate-limits ``search`` and ``web_search`` to one call per ``RATE`` seconds
  (in the session's config, so every process applies it).

Time comes from a clock that is a function of the session's history: ``BASE + 10 s`` per
committed revision. A resumed process therefore reads exactly the times an uninterrupted
run would have read, and two runs of the same session can be compared field by field.
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import StepResult
from claimfsm.engine.runtime import Engine, executor_factory
from claimfsm.skills.context import FixedClock
from claimfsm.skills.tools.builtin import builtin_tools
from claimfsm.skills.tools.core import Tool, ToolContext, ToolResult
from claimfsm.skills.tools.registry import ToolRegistry
from claimfsm.state.errors import UnknownSession

CLAIM = "NASA landed on the Moon in 1969 and the Eiffel Tower is in Berlin."
BASE = datetime(2026, 1, 1, tzinfo=UTC)
STEP = timedelta(seconds=10)


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def counted(tool: Tool[Any, Any], counter: Path, block: int) -> Tool[Any, Any]:
    """``tool`` with every invocation logged to ``counter``; invocation ``block`` hangs."""
    inner = tool.handler

    def handle(params: Any, *, context: ToolContext) -> ToolResult[Any]:
        line = f"{tool.name} {orjson.dumps(params.model_dump(mode='json')).decode()}\n"
        with counter.open("a", encoding="utf-8") as fh:
            fh.write(line)
        if block and len(counter.read_text(encoding="utf-8").splitlines()) == block:
            _say("blocked")
            while True:  # the parent kills us here, mid-step
                time.sleep(60)
        return inner(params, context=context)

    return Tool(name=tool.name, description=tool.description, params=tool.params,
                result=tool.result, handler=handle, examples=tool.examples)


def main(db: str, sid: str, stop: str, block: str, counter: str, rate: str) -> None:
    clock = FixedClock(current=BASE)

    def on_step(result: StepResult) -> None:
        if result.revision is not None:
            clock.advance(STEP)
            _say(f"rev {result.revision.rev}")

    engine = Engine.open(db, config=EngineConfig(clock=clock, on_step=on_step))
    registry = ToolRegistry(counted(t, Path(counter), int(block))
                            for t in builtin_tools(engine.index))
    engine.driver.tools = executor_factory(registry)
    with engine:
        try:
            head = engine.store.head(sid)
        except UnknownSession:
            config: dict[str, Any] = {}
            if float(rate) > 0:
                limit = {"capacity": 1, "per_seconds": float(rate)}
                config["rate_limits"] = {"search": limit, "web_search": limit}
            head = engine.driver.start(CLAIM, sid=sid, config=config)
        clock.current = BASE + STEP * head.rev  # what an uninterrupted run reads now
        finals = engine.driver.definition.finals
        while head.fsm not in finals and (int(stop) == 0 or head.rev < int(stop)):
            before = head.rev
            head = engine.driver.run(sid, max_steps=1)
            if head.rev == before:  # nothing committed: report it rather than spin
                break
    _say(f"head {head.rev} {head.fsm}")


if __name__ == "__main__":
    main(*sys.argv[1:])
