"""``claimfsm ui`` (the web inspector and its HTTP API) and ``claimfsm report`` (one
session as a self-contained HTML file)."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import click

from claimfsm.cli.common import db_option, fail, store
from claimfsm.cli.observing import log_format_option, otel_option, start_logging, tracing_for

__all__ = ["report", "ui"]


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_port(host: str, port: int) -> None:
    # A taken port is the common failure; say so before opening the store.
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            fail("PORT_IN_USE", f"--port {port}: cannot listen on {host}:{port} "
                 f"({exc.strerror or exc}); is another claimfsm ui running? Pick another "
                 "--port", as_json=False)


def _served_names(host: str, given: tuple[str, ...]) -> list[str]:
    # The bound address is served anyway (the guard reads it off each connection).
    names = [host, *given, *_configured_hosts()]
    if _loopback(host):
        names += ["localhost", "127.0.0.1", "::1"]
    return names


def _configured_hosts() -> list[str]:
    from claimfsm.engine.profile import find_config

    found = find_config(Path.cwd())
    table = (found[1] if found else {}).get("ui", {})
    hosts = table.get("allowed_hosts", []) if isinstance(table, dict) else None
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        fail("BAD_CONFIG", "claimfsm.toml: [ui] allowed_hosts must be a list of host "
             "names", as_json=False)
    return list(hosts or [])


@click.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback needs --allow-remote.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")
@click.option("--allow-remote", is_flag=True,
              help="Allow binding a non-loopback address. The UI has no authentication: "
              "anyone who reaches the port can drive sessions (docs/ui.md: put a proxy "
              "with authentication in front).")
@click.option("--records", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=None, help="Folder of record files the replay page offers "
              "(default: the bundled fixtures/sessions).")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="Also answer requests whose Host header names NAME (repeatable; e.g. "
              "the name a proxy forwards). Besides these, only the bound address is "
              "served, and localhost when it is loopback: a guard against DNS "
              "rebinding. Also [ui] allowed_hosts = [...] in claimfsm.toml.")
@otel_option
@log_format_option
def ui(db: str, host: str, port: int, allow_remote: bool, records: Path | None, otel: bool,
       log_format: str | None, allowed_hosts: tuple[str, ...]) -> None:
    """Serve the web inspector for the sessions in --db: list and search sessions, see a
    session's diagram, timeline, revisions, diffs and verdict, step/run/roll back/fork it,
    and replay records. The JSON API is under /api/v1 (OpenAPI at /api/v1/openapi.json);
    Prometheus metrics at /metrics. While it serves, it ticks every second (as `claimfsm
    tick`): due sessions advance.

    Binds 127.0.0.1 by default. There is no authentication in this version. Requests
    are refused when their Host is not a name of this server (421), when a page of
    another site sends them (403), when their body is over the limit (413, counted while
    it is read) or too slow (408); slow headers are cut after 10 s. With --log-format,
    every request is logged (method, path, status, ms, actor). See docs/operations.md.
    """
    try:
        import uvicorn

        from claimfsm.ui.app import create_app
        from claimfsm.ui.service import Service
    except ImportError as exc:
        fail("UI_UNAVAILABLE", f"the ui extra is not installed ({exc.name}): "
             "pip install 'claimfsm[ui]'", as_json=False)
        return
    if not _loopback(host):
        if not allow_remote:
            fail("BAD_INPUT", f"--host {host} is not a loopback address; the UI has no "
                 "authentication: pass --allow-remote to bind it anyway", as_json=False)
        click.echo(f"warning: binding {host}: anyone who reaches port {port} can read and "
                   "drive every session (no authentication)", err=True)
    _check_port(host, port)
    tracing = tracing_for(otel, False)
    start_logging(log_format)
    from claimfsm.cli.common import engine

    with engine(db, False) as eng:
        service = Service(eng, records) if records is not None else Service(eng)
        app = create_app(service, db_label=db,
                         allowed_hosts=_served_names(host, allowed_hosts))
        try:
            from claimfsm.ui.observing import observe_app

            observe_app(app, service, tracing=tracing)
        except ImportError as exc:  # an older install of the ui extra
            click.echo(f"warning: no /metrics: {exc.name} is not installed "
                       "(pip install 'claimfsm[ui]')", err=True)
        from claimfsm.ui.serving import server_config

        server = uvicorn.Server(server_config(app, host, port))
        click.echo(f"claimfsm ui: {db} at http://{host}:{port}/ (Ctrl-C stops it)", err=True)
        from claimfsm.engine.tick import Ticker

        # Due sessions (a passed wait deadline, a due retry) advance while the UI runs.
        ticker = Ticker(eng.driver, guard=service.locked).start()
        try:
            server.run()
        except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it shut down on
            pass
        except SystemExit:  # uvicorn's own exit when it cannot start: already reported
            server.started = False
        finally:
            ticker.stop()
            if tracing is not None:
                tracing.flush()
    if not server.started:
        fail("UI_FAILED", f"could not serve on {host}:{port} (see above)", as_json=False)


@click.command()
@click.argument("sid")
@db_option
@click.option("--html", "html", required=True, type=click.Path(dir_okay=False),
              help="Write the report to this file (one self-contained HTML file).")
def report(sid: str, db: str, html: str) -> None:
    """Write session SID as one HTML file that opens offline: the state diagram with the
    executed path, the timeline, every revision's state, envelope and events, and the
    verdict with its evidence, and its lineage (the session it was forked from, the
    sessions forked from it). For a bug report or a review."""
    from datetime import UTC, datetime

    from claimfsm.engine.lineage import lineage_json
    from claimfsm.engine.machine import DEFAULT_MACHINE
    from claimfsm.ui.report import render_report

    with store(db, False) as opened:
        revisions = list(opened.history(sid))
        if not revisions:
            opened.head(sid)
        lineage = lineage_json(opened, revisions[-1])
    text = render_report(DEFAULT_MACHINE, revisions, lineage=lineage,
                         generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    try:
        Path(html).write_text(text, encoding="utf-8")
    except OSError as exc:
        fail("REPORT_WRITE_FAILED", f"--html {html}: {exc.strerror or exc}", as_json=False)
    click.echo(f"{html}: session {sid}, {len(revisions)} revisions")
