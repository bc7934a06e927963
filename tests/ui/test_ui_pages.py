"""The inspector's pages and the pieces they are built from: the diagram, diffs, JSON
with a marked path, evidence with marked terms, the self-contained report, and the CLI
commands that serve and write them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.machine import DEFAULT_MACHINE
from claimfsm.engine.runtime import FIXTURES, Engine
from claimfsm.ui.diagram import diagram_svg, executed_moves, layout
from claimfsm.ui.diff import diff_values
from claimfsm.ui.html import json_html, mark_terms
from claimfsm.ui.report import render_report
from tests.support.components import need_module

starlette = need_module("starlette", "ui")
from starlette.testclient import TestClient  # noqa: E402

from tests.replay.sealing import reseal  # noqa: E402
from tests.support.ui_helpers import app_client  # noqa: E402


def test_diagram_marks_the_path_and_the_current_state() -> None:
    path = ["PARSE_CLAIM", "RETRIEVAL", "RETRIEVAL", "EXTRACT"]
    svg = diagram_svg(DEFAULT_MACHINE, path=path, current="EXTRACT")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    taken = set(re.findall(r'class="edge taken" data-move="([^"]+)"', svg))
    assert taken == {"PARSE_CLAIM->RETRIEVAL", "RETRIEVAL->RETRIEVAL", "RETRIEVAL->EXTRACT"}
    assert re.findall(r'class="state visited current" data-state="(\w+)"', svg) == ["EXTRACT"]
    assert set(re.findall(r'data-state="(\w+)"', svg)) == set(DEFAULT_MACHINE.names)
    assert "http" not in svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert executed_moves(["A"]) == set()


def test_layout_puts_failure_below_and_no_boxes_overlap() -> None:
    pos = layout(DEFAULT_MACHINE)
    assert pos["FAILED"][1] > pos["DONE"][1]
    xs = [pos[n][0] for n in ("PARSE_CLAIM", "RETRIEVAL", "EXTRACT", "VERIFY", "AGGREGATE")]
    assert xs == sorted(xs) and len(set(pos.values())) == len(pos)


def test_diff_values() -> None:
    a = {"x": 1, "l": [1, 2, 3], "d": {"k": "v"}, "gone": True}
    b = {"x": 2, "l": [1, 2], "d": {"k": "v", "new": None}, "t": 1.0}
    got = {(c["path"], c["op"]) for c in diff_values(a, b)}
    assert got == {("x", "changed"), ("l[2]", "removed"), ("d.new", "added"),
                   ("gone", "removed"), ("t", "added")}
    assert diff_values({"n": 1}, {"n": 1.0})[0]["op"] == "changed"
    assert diff_values([1], [1]) == []


def test_json_html_marks_one_path_and_escapes() -> None:
    html = json_html({"d": {"plans": [{"q": "<b>"}, {"q": "x"}]}, "s": "ok"}, "d.plans[1].q")
    assert '<mark id="hit">&quot;x&quot;</mark>' in html
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert json_html({"a": 1}, None).count("<mark") == 0


def test_mark_terms_by_stem() -> None:
    out = mark_terms("Glaciers melted <fast> in 2019.", "Glacier melting since 2019")
    assert "<mark>Glaciers</mark>" in out and "<mark>melted</mark>" in out
    assert "<mark>2019</mark>" in out and "&lt;fast&gt;" in out


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine.open(str(tmp_path / "r.db")) as eng:
        yield eng


def test_report_is_self_contained(engine: Engine) -> None:
    head = engine.start("NASA landed on the Moon in 1969.")
    head = engine.driver.run(head.sid)
    revisions = list(engine.store.history(head.sid))
    html = render_report(DEFAULT_MACHINE, revisions, generated="today")
    assert html.startswith("<!doctype html>") and "<script" not in html
    assert not re.search(r'(?:src|href)="(?!#)', html), "a report loads nothing"
    assert html.count('<details class="card" id="revision-') == len(revisions)
    assert 'id="verdict-label">SUPPORTS' in html and "<mark>" in html
    assert "class=\"state visited current\" data-state=\"DONE\"" in html


def test_report_command(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    with Engine.open(db) as eng:
        sid = eng.driver.run(eng.start("The Eiffel Tower is in Paris.").sid).sid
    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["report", sid, "--db", db, "--html", str(out)])
    assert r.exit_code == 0, r.output
    assert f"session {sid}" in r.output and "<svg" in out.read_text()
    r = CliRunner().invoke(main, ["report", "nope", "--db", db, "--html", str(out)])
    assert r.exit_code == 2 and "UNKNOWN_SESSION" in r.output
    r = CliRunner().invoke(main, ["report", sid, "--db", str(tmp_path / "none.db"),
                                  "--html", str(out)])
    assert r.exit_code == 2 and "UNKNOWN_DB" in r.output
    r = CliRunner().invoke(main, ["report", sid, "--db", db, "--html",
                                  str(tmp_path / "no" / "dir.html")])
    assert r.exit_code == 2 and "REPORT_WRITE_FAILED" in r.output


def test_ui_refuses_a_public_address_without_the_flag(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["ui", "--db", str(tmp_path / "x.db"), "--host", "0.0.0.0"])
    assert r.exit_code == 2 and "--allow-remote" in r.output
    assert not (tmp_path / "x.db").exists()
    help_text = CliRunner().invoke(main, ["ui", "--help"]).output
    assert "API key" in help_text and "--port" in help_text


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with app_client(tmp_path / "ui.db") as c:
        yield c


def _start(client: TestClient, claim: str) -> str:
    return str(client.post("/api/v1/sessions", json={"claim": claim}).json()["sid"])


def test_sessions_page_search_filters_and_next_page(client: TestClient) -> None:
    sids = [_start(client, f"Claim {i} about glaciers") for i in range(3)]
    html = client.get("/?limit=2").text
    assert re.findall(r'class="session" data-sid="(\w+)"', html) == sids[::-1][:2]
    nxt = re.search(r'id="next" href="/\?([^"]+)"', html)
    assert nxt is not None
    rest = client.get("/?" + nxt.group(1).replace("&amp;", "&")).text
    assert re.findall(r'class="session" data-sid="(\w+)"', rest) == [sids[0]]
    found = client.get("/?q=Claim+1").text
    assert re.findall(r'class="session" data-sid="(\w+)"', found) == [sids[1]]
    assert "No sessions match" in client.get("/?verdict=REFUTES").text


def test_session_page_panels_document_and_errors(client: TestClient) -> None:
    sid = _start(client, "NASA landed on the Moon in 1969.")
    client.post(f"/api/v1/sessions/{sid}/run", json={})
    page = client.get(f"/sessions/{sid}").text
    assert f'data-sid="{sid}"' in page and "<svg" in page and 'id="timeline"' in page
    assert 'href="/documents/apollo-11"' in page and 'id="step"' in page
    panels = client.get(f"/sessions/{sid}/panels").text
    assert 'data-head="' in panels and "<html" not in panels
    doc = client.get("/documents/apollo-11").text
    assert "Eagle" in doc
    missing = client.get("/sessions/nope")
    assert missing.status_code == 404 and "UNKNOWN_SESSION" in missing.text
    assert client.get("/documents/nope").status_code == 404


def test_replay_page_marks_the_divergence(client: TestClient) -> None:
    assert "supported.jsonl" in client.get("/replay").text
    clean = client.post("/replay", data={"name": "supported.jsonl", "mode": "strict"},
                        files={"file": ("", b"")})
    assert "replayed clean" in clean.text
    lines = (FIXTURES / "sessions" / "supported.jsonl").read_bytes().splitlines()
    edited = lines[3].replace(b'"s":"ok"', b'"s":"retry"', 1)
    tampered = client.post("/replay", data={"mode": "strict"},
                           files={"file": ("t.jsonl", b"\n".join([*lines[:3], edited,
                                                                  *lines[4:]]) + b"\n")})
    assert tampered.status_code == 422 and "RECORD_TAMPERED" in tampered.text
    assert "line 4: envelope.s:" in tampered.text
    lines[3] = reseal(edited)  # the same line as a changed engine would have written it
    bad = client.post("/replay", data={"mode": "strict"},
                      files={"file": ("t.jsonl", b"\n".join(lines) + b"\n")})
    assert "DIVERGED" in bad.text and 'class="diverged" data-line="4"' in bad.text
    assert "<mark id=\"hit\">&quot;retry&quot;</mark>" in bad.text
    broken = client.post("/replay", data={"mode": "strict"},
                         files={"file": ("b.jsonl", b"{}\n")})
    assert broken.status_code == 422 and "BAD_RECORD" in broken.text
    none: Any = client.post("/replay", data={"mode": "strict"}, files={"file": ("", b"")})
    assert none.status_code == 422


def test_docs_ui_matches_the_api_and_its_pictures_exist() -> None:
    from claimfsm.ui.docs import with_reference

    docs = Path(__file__).resolve().parents[2] / "docs"
    text = (docs / "ui.md").read_text()
    assert text == with_reference(text), "regenerate: python -m claimfsm.ui.docs docs/ui.md"
    for picture in re.findall(r"\]\((ui/[\w-]+\.png)\)", text):
        assert (docs / picture).stat().st_size > 10_000, picture


def test_claimfsm_ui_serves_until_interrupted(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.support.ui_helpers import free_port

    db = tmp_path / "served.db"
    with Engine.open(str(db)) as eng:
        sid = eng.start("Honey never spoils.").sid
    port = free_port()
    cmd = [sys.executable, "-c", "from claimfsm.cli.main import main; main()", "ui",
           "--db", str(db),
           "--port", str(port)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    try:
        body = b""
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/sessions") as r:
                    body = r.read()
                break
            except OSError:
                time.sleep(0.1)
        assert sid.encode() in body
        busy = subprocess.run([*cmd], capture_output=True, text=True, timeout=60)
        assert busy.returncode == 2 and "PORT_IN_USE" in busy.stderr  # a clean failure
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err
    assert f"http://127.0.0.1:{port}/" in err


def test_records_folder_offers_only_its_records(tmp_path: Path) -> None:
    from claimfsm.engine.errors import BadInput
    from claimfsm.ui.service import Service

    folder = tmp_path / "records"
    (folder / "nested").mkdir(parents=True)
    data = (FIXTURES / "sessions" / "supported.jsonl").read_bytes()
    (folder / "nested" / "mine.jsonl").write_bytes(data)
    (folder / "notes.txt").write_text("not a record")
    (tmp_path / "outside.jsonl").write_bytes(data)
    with Engine.open(None) as eng:
        service = Service(eng, folder)
        assert service.record_names() == ["nested/mine.jsonl"]
        assert service.record_bytes("nested/mine.jsonl") == (data, "nested/mine.jsonl")
        for name in ("../outside.jsonl", "notes.txt", str(tmp_path / "outside.jsonl")):
            with pytest.raises(BadInput):
                service.record_bytes(name)
        assert Service(eng, tmp_path / "missing").record_names() == []
    r = CliRunner().invoke(main, ["ui", "--records", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "does not exist" in r.output
