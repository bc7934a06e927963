"""The inspector's stylesheet and scripts are package data: files under fsm/ui/assets,
shipped by pyproject's package-data globs, read through importlib.resources, and inlined
byte for byte into the pages the app serves and the reports it writes."""

from __future__ import annotations

import fnmatch
import importlib.resources
import tomllib
from pathlib import Path

import pytest

from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.engine.runtime import Engine
from claimfsm.ui.report import render_report
from claimfsm.ui.static import ASSETS, asset
from tests.support.components import need_module

ROOT = Path(__file__).resolve().parent.parent.parent


def packaged(name: str) -> bytes:
    return (importlib.resources.files("claimfsm.ui") / "assets" / name).read_bytes()


def test_every_asset_file_is_shipped_by_the_package_data_globs() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folder = ROOT / config["package-dir"]["claimfsm"] / "ui"
    globs = config["package-data"]["claimfsm.ui"]
    on_disk = sorted(p.relative_to(folder).as_posix() for p in (folder / "assets").iterdir())
    assert sorted(f"assets/{name}" for name in ASSETS) == on_disk
    unshipped = [f for f in on_disk if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert unshipped == []


def test_assets_are_read_once_through_importlib_resources() -> None:
    for name in ASSETS:
        text = asset(name)
        assert text.encode() == packaged(name) and asset(name) is text
        assert text.endswith("\n") and not text.startswith("\n")
    with pytest.raises(ValueError, match="no UI asset"):
        asset("../static.py")


def test_the_pages_inline_the_packaged_bytes(tmp_path: Path) -> None:
    need_module("starlette", "ui")
    from tests.support.ui_helpers import app_client

    style = b"<style>\n" + packaged("inspector.css") + b"</style>"
    with app_client(tmp_path / "ui.db") as client:
        sid = client.post("/api/v1/sessions", json={"claim": "Honey never spoils."}).json()["sid"]
        pages = {url: client.get(url).content for url in ("/", f"/sessions/{sid}", "/replay")}
    for url, body in pages.items():
        assert body.count(b"<style>") == 1 and style in body, url
    assert b"<script>\n" + packaged("sessions.js") + b"</script>" in pages["/"]
    assert b"<script>\n" + packaged("session.js") + b"</script>" in pages[f"/sessions/{sid}"]
    assert b"<script>\n" + packaged("replay.js") + b"</script>" in pages["/replay"]


def test_the_report_inlines_the_stylesheet_and_no_script(tmp_path: Path) -> None:
    with Engine.open(str(tmp_path / "r.db")) as eng:
        head = eng.driver.run(eng.start("Honey never spoils.").sid)
        html = render_report(DEFAULT_MACHINE, list(eng.store.history(head.sid))).encode()
    assert b"<style>\n" + packaged("inspector.css") + b"</style>" in html
    assert b"<script" not in html
