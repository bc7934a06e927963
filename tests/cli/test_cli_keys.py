"""``claimfsm keys add|list|revoke``: the key is printed once and only its digest is
stored (searched in the file's bytes); list never shows it; the error codes for a taken
name, an unknown role, a bad duration and an unknown key; ``ui --allow-remote`` is
refused on a store without keys and let through with one."""

from __future__ import annotations

import getpass
import json
import socket
from pathlib import Path

from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.state.keys import split_key
from claimfsm.state.sqlite import SQLiteStore


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def test_add_list_revoke(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    code, out = _run("keys", "add", "ann", "--role", "write", "--expires", "30d", "--db", db)
    assert code == 0, out
    text = out.strip().splitlines()[-1]
    parts = split_key(text)
    assert parts is not None
    code, out = _run("keys", "add", "ops", "--role", "admin", "--db", db, "--json")
    added = json.loads(out)
    assert code == 0 and added["name"] == "ops" and added["expires_at"] is None
    assert split_key(added["key"]) is not None
    files = [p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("k.db")]
    assert any(b"ann" in data for data in files)  # the rows are there, in the clear
    for secret in (parts[1], added["key"]):
        assert not any(secret.encode() in data for data in files)
    with SQLiteStore(db, readonly=True) as store:
        (ann, _ops) = store.api_keys()
        assert ann.matches(parts[1]) and ann.expires_at is not None

    code, out = _run("keys", "list", "--db", db, "--json")
    listed = json.loads(out)
    assert code == 0 and [(k["name"], k["role"], k["status"]) for k in listed] == [
        ("ann", "write", "live"), ("ops", "admin", "live")]
    assert text not in out and "digest" not in out and "salt" not in out
    code, out = _run("keys", "list", "--db", db)
    assert code == 0 and "ann" in out and text not in out

    code, out = _run("keys", "revoke", "ann", "--db", db, "--json", "--actor", "dana")
    assert code == 0 and json.loads(out)["status"] == "revoked"
    code, out = _run("keys", "list", "--db", db, "--json")
    assert [k["status"] for k in json.loads(out)] == ["revoked", "live"]
    # Who added and who revoked: --actor, else the login name.
    assert [(k["created_by"], k["revoked_by"]) for k in json.loads(out)] == [
        (getpass.getuser(), "dana"), (getpass.getuser(), None)]


def test_the_actor_is_checked_and_recorded(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    code, out = _run("keys", "add", "ann", "--role", "read", "--actor", "lee", "--db", db,
                     "--json")
    assert code == 0 and json.loads(out)["created_by"] == "lee"
    for bad in ("", " ", "x" * 201):
        code, out = _run("keys", "add", "bob", "--role", "read", "--actor", bad, "--db", db,
                         "--json")
        assert code == 2 and json.loads(out)["error"]["code"] == "BAD_INPUT", out
        code, out = _run("keys", "revoke", "ann", "--actor", bad, "--db", db, "--json")
        assert code == 2 and json.loads(out)["error"]["code"] == "BAD_INPUT", out
    with SQLiteStore(db, readonly=True) as store:
        assert [(k.name, k.created_by, k.revoked_at) for k in store.api_keys()] == [
            ("ann", "lee", None)]


def test_error_codes(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    assert _run("keys", "add", "ann", "--role", "read", "--db", db)[0] == 0
    cases = [
        (["keys", "add", "ann", "--role", "read"], "KEY_EXISTS"),
        (["keys", "add", "bob", "--role", "boss"], "BAD_ROLE"),
        (["keys", "add", "bob", "--role", "read", "--expires", "3y"], "BAD_DURATION"),
        (["keys", "add", "bob", "--role", "read", "--expires", "0d"], "BAD_DURATION"),
        (["keys", "add", "no spaces", "--role", "read"], "BAD_INPUT"),
        (["keys", "revoke", "nobody"], "UNKNOWN_KEY"),
    ]
    for args, code in cases:
        status, out = _run(*args, "--db", db)
        assert status == 2 and f"error: {code}: " in out, (args, out)
    status, out = _run("keys", "revoke", "nobody", "--db", db, "--json")
    assert status == 2 and json.loads(out)["error"]["code"] == "UNKNOWN_KEY"
    _run("keys", "revoke", "ann", "--db", db)
    assert "UNKNOWN_KEY" in _run("keys", "revoke", "ann", "--db", db)[1]
    status, out = _run("keys", "list", "--db", str(tmp_path / "none.db"))
    assert status == 2 and "UNKNOWN_DB" in out
    assert not (tmp_path / "none.db").exists()


def test_allow_remote_needs_a_key(tmp_path: Path) -> None:
    db = str(tmp_path / "ui.db")
    status, out = _run("ui", "--db", db, "--host", "0.0.0.0", "--allow-remote")
    assert status == 2 and "NO_KEYS" in out and "keys add" in out
    assert not Path(db).exists()
    assert _run("keys", "add", "ops", "--role", "admin", "--db", db)[0] == 0
    # With a key the check passes: the next one, a taken port, is what stops it here.
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        port = str(taken.getsockname()[1])
        status, out = _run("ui", "--db", db, "--host", "0.0.0.0", "--allow-remote",
                           "--port", port)
    assert status == 2 and "PORT_IN_USE" in out and "NO_KEYS" not in out
