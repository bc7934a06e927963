"""Session-wide test set-up: the summary of components that were missing."""

from __future__ import annotations

from collections import Counter

import pytest

# The throwaway PostgreSQL cluster (``pg_server``, per-test ``pg_url``) and local Ray.
pytest_plugins = ["tests.support.pg", "tests.support.ray_local"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say plainly which real components were missing and how many tests that skipped."""
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            msg = str(longrepr[2]).removeprefix("Skipped: ")
            if msg.startswith("no "):
                reasons[msg.split(":", 1)[0]] += 1
    if reasons:
        terminalreporter.write_sep("=", "real components missing on this machine", yellow=True)
        for component, n in sorted(reasons.items()):
            terminalreporter.write_line(f"{component}: {n} test(s) skipped")
        terminalreporter.write_line("CI sets CLAIMFSM_REQUIRE_ALL=1 and installs them (.ci/run).")
