"""``claimfsm skill`` (one skill on stdin JSON) and ``claimfsm diagram``."""

from __future__ import annotations

import sys

import click

from claimfsm.cli.common import json_option
from claimfsm.engine.machine import DEFAULT_MACHINE, mermaid
from claimfsm.skills.context import SkillContext
from claimfsm.skills.envelope import Envelope
from claimfsm.skills.limits import MAX_INPUT_BYTES
from claimfsm.skills.registry import all_skills

__all__ = ["diagram", "skill"]


@click.command()
@click.argument("name")
@json_option
def skill(name: str, as_json: bool) -> None:
    """Run skill NAME on the input JSON read from stdin; print its envelope.

    Exit 0 when s is ok, 1 otherwise. NAME: parse_claim, evidence_query_plan,
    tool_request_compose, retrieve, evidence_extract, stance_judge, verdict_aggregate.
    The skills that call tools (retrieve, evidence_extract) get the built-in tools over the
    bundled demo corpus, in memory.
    """
    skills = all_skills()
    if name not in skills:
        env = Envelope.error("UNKNOWN_SKILL", f"name: no skill {name!r} "
                             f"(known: {', '.join(skills)})")
    else:
        # Read one byte past the limit so an oversized input is refused without reading it all.
        raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if name in _WITH_TOOLS:
            env = _run_with_tools(name, raw)
        else:
            env = skills[name].run(raw, SkillContext())
    click.echo(env.to_json().decode())
    sys.exit(0 if env.s == "ok" else 1)


# Skills whose handler calls tools, and the state whose tool session they run in.
_WITH_TOOLS = {"retrieve": "RETRIEVAL", "evidence_extract": "EXTRACT"}


def _run_with_tools(name: str, raw: bytes) -> Envelope:
    from claimfsm.engine.runtime import Engine
    from claimfsm.state.model import SessionState

    with Engine.open(None) as eng:
        assert eng.driver.tools is not None
        clock = SkillContext().clock
        state = SessionState(sid="skill", claim="-", fsm=_WITH_TOOLS[name])
        tools = eng.driver.tools(state, clock)
        return all_skills()[name].run(raw, SkillContext(clock=clock, tools=tools))


@click.command()
@click.option("--version", "version", is_flag=True,
              help="Print the machine's version instead: the digest of its definition and "
              "its skills' declared versions that every new session stores "
              "(docs/versioning.md).")
def diagram(version: bool) -> None:
    """Print the machine as a Mermaid stateDiagram-v2 (generated from its definition)."""
    if version:
        from claimfsm.engine.bindings import DEFAULT_BINDINGS
        from claimfsm.engine.version import machine_version

        click.echo(machine_version(DEFAULT_MACHINE, DEFAULT_BINDINGS))
        return
    click.echo(mermaid(DEFAULT_MACHINE), nl=False)
