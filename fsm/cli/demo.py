"""``claimfsm demo``: the bundled demo claims, a few step by step, then a table."""

from __future__ import annotations

import click
import orjson

from claimfsm.cli.common import db_option, engine, print_step
from claimfsm.engine.views import revision_line, session_summary

__all__ = ["demo"]


@click.command()
@db_option
def demo(db: str) -> None:
    """Verify the bundled demo claims on the demo corpus and show how each went.

    One supported, one refuted and one not-enough-info claim are shown step by step; every
    demo claim then appears in a table with its expected and actual verdict.
    """
    from claimfsm.engine.runtime import FIXTURES

    claims = orjson.loads((FIXTURES / "demo_claims.json").read_bytes())
    shown: set[str] = set()
    rows: list[tuple[str, str, str, int]] = []
    with engine(db, False) as eng:
        click.echo(f"evidence index: {eng.index.count_documents()} documents, "
                   f"{eng.index.count_facts()} facts ({db})\n")
        for item in claims:
            detail = item["expected"] not in shown
            eng.driver.on_step = print_step if detail else None
            if detail:
                shown.add(item["expected"])
                click.echo(f"== {item['claim']}")
            head = eng.driver.start(item["claim"])
            if detail:
                click.echo(revision_line(head))
            head = eng.driver.run(head.sid)
            if detail:
                click.echo("\n".join(session_summary(head)) + "\n")
            verdict = head.state.verdict["label"] if head.state.verdict else head.fsm
            rows.append((item["claim"], item["expected"], verdict, head.rev))
    width = max(len(r[0]) for r in rows)
    click.echo(f"{'claim':<{width}}  {'expected':<16} {'verdict':<16} revs")
    for claim, expected, verdict, revs in rows:
        mark = "" if expected == verdict else "  <- differs"
        click.echo(f"{claim:<{width}}  {expected:<16} {verdict:<16} {revs}{mark}")
    right = sum(1 for r in rows if r[1] == r[2])
    click.echo(f"\n{right}/{len(rows)} demo claims as expected; sessions kept in {db} "
               f"(try: claimfsm history SID --db {db}, or see them in the browser: "
               f"claimfsm ui --db {db})")
