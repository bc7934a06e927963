"""``claimfsm keys add|list|revoke``: the API keys of a store (docs/security.md).

The key is printed once, by ``add``; the store keeps its name, role, times and a salted
digest, and nothing prints or logs the key again. Once a store has a key, ``claimfsm ui``
asks for one on every page and ``/api/v1`` call.
"""

from __future__ import annotations

from datetime import UTC, datetime

import click

from claimfsm.cli.common import (
    actor_or_login,
    db_option,
    emit,
    existing_store,
    fail,
    json_option,
)

__all__ = ["keys"]

_actor = click.option(
    "--actor", default=None, metavar="NAME",
    help="Who does it, kept in the key's row (default: the login name).")

_ROLE_HELP = ("read: look; review: give input to a waiting session; write: also start, "
              "step, run, roll back, fork, edit, resume; admin: also delete sessions and "
              "manage keys.")


@click.group()
def keys() -> None:
    """Manage the API keys of --db: add (prints the key once), list, revoke. With at least
    one key, `claimfsm ui` needs one on every page and /api/v1 call, and may bind a
    non-loopback address with --allow-remote (docs/security.md)."""


@keys.command("add")
@click.argument("name")
@click.option("--role", required=True, metavar="read|review|write|admin", help=_ROLE_HELP)
@click.option("--expires", default=None, metavar="DURATION",
              help="The key stops working after this long: 45s, 90m, 12h, 30d, 2w "
              "(default: never).")
@_actor
@db_option
@json_option
def add(name: str, role: str, expires: str | None, actor: str | None, db: str,
        as_json: bool) -> None:
    """Add the key NAME with --role and print it: the only time it is shown (the store
    keeps a salted digest). Names are never reused, revoked ones included, so the actor
    recorded on a revision names one key. Creates --db if it does not exist.

    --json prints {"name", "role", "created_at", "expires_at", "revoked_at", "created_by",
    "revoked_by", "key"}; created_by is --actor (or the login name).
    KEY_EXISTS, BAD_ROLE, BAD_DURATION or BAD_INPUT (the name) exit 2.
    """
    from claimfsm.engine.errors import ClaimFsmError
    from claimfsm.state.keys import check_name, check_role, new_key, parse_duration
    from claimfsm.state.open import open_store

    try:
        check_name(name)
        check_role(role)
        lasts = None if expires is None else parse_duration(expires)
        text, row = new_key(name, role, now=datetime.now(UTC), expires=lasts,
                            actor=actor_or_login(actor, as_json))
        opened = open_store(db)
    except (ClaimFsmError, OSError) as exc:
        fail(getattr(exc, "code", "OPEN_FAILED"), str(getattr(exc, "msg", exc)),
             as_json=as_json)
        return
    try:
        opened.add_key(row)
    except ClaimFsmError as exc:
        fail(exc.code, exc.msg, as_json=as_json)
    finally:
        opened.close()
    if as_json:
        emit({**row.public(), "key": text})
        return
    until = f", expires {row.expires_at}" if row.expires_at else ""
    click.echo(f"added key {name} ({role}{until}); it is shown once, keep it now:", err=True)
    click.echo(text)


@keys.command("list")
@db_option
@json_option
def list_keys(db: str, as_json: bool) -> None:
    """List the keys of --db, oldest first: name, role, created, expires, revoked. Never
    the key itself.

    --json prints a list of {"name", "role", "created_at", "expires_at", "revoked_at",
    "created_by", "revoked_by", "status"} (status: live, expired or revoked; the two
    actors are null on keys added before they were recorded).
    """
    from claimfsm.state.keys import stamp

    now = stamp(datetime.now(UTC))
    with existing_store(db, as_json, readonly=True) as opened:
        rows = list(opened.api_keys())
    listed = [{**k.public(), "status": "revoked" if k.revoked_at else
               "live" if k.live(now) else "expired"} for k in rows]
    if as_json:
        emit(listed)
        return
    if not listed:
        click.echo("no keys: the UI and API are open to whoever reaches them (loopback only)")
        return
    for k in listed:
        ends = k["revoked_at"] or k["expires_at"] or "-"
        click.echo(f"{k['name']:<20} {k['role']:<7} {k['status']:<8} created "
                   f"{k['created_at']}  ends {ends}")


@keys.command("revoke")
@click.argument("name")
@_actor
@db_option
@json_option
def revoke(name: str, actor: str | None, db: str, as_json: bool) -> None:
    """Revoke the key NAME: it stops working (a running `claimfsm ui` notices within 5
    seconds) and stays listed as revoked; its name is not reused.

    --json prints the revoked key as `keys list` shows it. UNKNOWN_KEY (exit 2) when there
    is no live key NAME.
    """
    from claimfsm.state.keys import stamp

    who = actor_or_login(actor, as_json)
    with existing_store(db, as_json) as opened:
        row = opened.revoke_key(name, at=stamp(datetime.now(UTC)), actor=who)
    if as_json:
        emit({**row.public(), "status": "revoked"})
        return
    click.echo(f"revoked key {name} at {row.revoked_at}")
