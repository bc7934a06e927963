"""The pytest plugin: registered as an entry point, its fixtures work, and the example of
docs/testing.md passes exactly as written."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def doc_files() -> dict[str, str]:
    """The ``<!-- file: NAME -->`` code blocks of docs/testing.md."""
    pattern = re.compile(r"<!-- file: (\S+) -->\n```python\n(.*?)```", re.S)
    return dict(pattern.findall(DOC.read_text(encoding="utf-8")))


def test_the_plugin_is_a_pytest11_entry_point() -> None:
    points = importlib.metadata.entry_points(group="pytest11")
    assert any(p.name == "claimfsm" and p.value == "claimfsm.testing.plugin" for p in points)


def test_the_docs_example_passes_as_written(pytester: pytest.Pytester) -> None:
    files = doc_files()
    assert set(files) == {"word_count.py", "test_word_count.py"}
    for name, text in files.items():
        pytester.makepyfile(**{name[:-3]: text})
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)


def test_the_docs_example_fails_when_the_skill_is_wrong(pytester: pytest.Pytester) -> None:
    files = doc_files()
    broken = files["word_count.py"].replace("len(inp.claim.split())",
                                            "len(inp.claim.split()) + 1")
    pytester.makepyfile(word_count=broken, test_word_count=files["test_word_count.py"])
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=2)


def test_every_fixture_is_usable(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fixtures="""
from datetime import timedelta
from pathlib import Path
from claimfsm.testing import goto

SESSIONS = Path(__SESSIONS__)


def test_clock_ids_store(claimfsm_clock, claimfsm_ids, claimfsm_store):
    start = claimfsm_clock.now()
    claimfsm_clock.advance(timedelta(seconds=5))
    assert (claimfsm_clock.now() - start).total_seconds() == 5
    assert [claimfsm_ids.next("t"), claimfsm_ids.next("t")] == ["t1", "t2"]
    assert list(claimfsm_store.sessions()) == []


def test_driver_uses_the_store(claimfsm_driver, claimfsm_store):
    driver = claimfsm_driver(scripts={"PARSE_CLAIM": [goto("FAILED")]})
    head = driver.run(driver.start("c").sid)
    assert head.fsm == "FAILED" and claimfsm_store.head(head.sid).rev == 1


def test_tools(claimfsm_tools):
    claimfsm_tools.responses["search"] = {"hits": []}
    assert claimfsm_tools.call("search", {"q": "x"}).ok


def test_replay(claimfsm_replay):
    assert claimfsm_replay(SESSIONS / "supported.jsonl").ok
""".replace("__SESSIONS__", repr(str(DOC.parent.parent / "fixtures" / "sessions"))))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
