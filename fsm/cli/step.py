"""``claimfsm step``: fire one transition of a session.

A module of its own because it is the command a script runs once per transition: it
loads the options it has, not those of ``verify`` and ``start`` (the profile, the
session limits, the people-in-the-loop options) that ``claimfsm.cli.session`` builds.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from claimfsm.cli.common import (
    actor_option,
    db_option,
    durability_option,
    emit,
    engine,
    json_option,
    on_version_option,
    print_step,
    record_option,
)
from claimfsm.cli.observing import otel_option, traced
from claimfsm.engine.views import step_json

if TYPE_CHECKING:  # an annotation: the engine's modules load when the command opens it
    from claimfsm.engine.config import Durability

__all__ = ["step"]


@click.command()
@click.argument("sid")
@db_option
@json_option
@durability_option
@record_option
@on_version_option
@otel_option
@actor_option
def step(sid: str, db: str, as_json: bool, durability: Durability, record: str | None,
         on_version: str, otel: bool, actor: str | None) -> None:
    """Fire one transition of session SID (exit 1 if the step failed; exit 3, code
    WAITING, when the session waits for a person: nothing is committed). A session
    started on another version of the machine is refused (VERSION_MISMATCH, exit 2)
    unless --on-version continue; see docs/versioning.md."""
    with engine(db, as_json, durability=durability, create=False,
                on_version=on_version) as eng:
        if record is not None:
            from claimfsm.cli import replay

            eng.driver.on_step = replay.recorder_for_session(record, eng, sid, as_json)
        with traced(eng, otel, as_json):
            result = eng.driver.step(sid, actor=actor)
        if as_json:
            emit(step_json(result))
        else:
            print_step(result)
        if result.envelope.e is not None and result.envelope.e.code == "WAITING":
            sys.exit(3)
        if result.envelope.s != "ok":
            sys.exit(1)
