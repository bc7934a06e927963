"""A child process for the kill test of gathered calls (``tests/engine/test_gather_kill.py``).

``python -m tests.support.gather_worker DB SOURCES_JSON``

Opens the engine on the SQLite file ``DB`` with the HTTP sources ``SOURCES_JSON`` (the
``[sources]`` table as JSON) and drives session ``G1`` (started with :data:`CLAIM` if it
does not exist) until it is final, printing ``rev N FSM`` after each committed step.
"""

from __future__ import annotations

import sys

import orjson

from claimfsm.engine.config import EngineConfig
from claimfsm.engine.driver import StepResult
from claimfsm.engine.runtime import Engine
from claimfsm.skills.tools.http.config import parse_sources
from claimfsm.state.errors import UnknownSession

CLAIM = ("Neil Armstrong and Buzz Aldrin landed the Apollo 11 lunar module Eagle on the Moon "
         "in July 1969 near the Sea of Tranquility after the Saturn V launch from Florida and "
         "Yuri Gagarin flew the Vostok 1 spacecraft around the Earth in April 1961.")


def _say(result: StepResult) -> None:
    if result.revision is not None:
        sys.stdout.write(f"rev {result.revision.rev} {result.revision.fsm}\n")
        sys.stdout.flush()


def main() -> None:
    db, table = sys.argv[1], orjson.loads(sys.argv[2])
    cfg = EngineConfig(sources=parse_sources(table), on_step=_say)
    with Engine.open(db, config=cfg) as eng:
        eng.driver.new_sid = lambda: "G1"
        try:
            eng.store.head("G1")
        except UnknownSession:
            eng.start(CLAIM)
        head = eng.driver.run("G1")
        sys.stdout.write(f"head {head.rev} {head.fsm}\n")


if __name__ == "__main__":
    main()
