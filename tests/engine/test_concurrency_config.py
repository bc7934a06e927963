"""``max_concurrent_tools`` in a session's config: checked at start with the field named,
given to every step's executor, set by ``--max-concurrent-tools``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from claimfsm.cli.main import main
from claimfsm.engine.limits import DEFAULT_CONCURRENT_TOOLS, SessionConfigError, SessionLimits
from claimfsm.engine.runtime import Engine
from claimfsm.state.model import SessionState


@pytest.mark.parametrize("bad", [0, 65, -1, 2.5, "4", True])
def test_a_bad_value_is_refused_at_start_naming_the_field(bad: Any) -> None:
    with Engine.open(None) as eng, pytest.raises(SessionConfigError) as err:
        eng.start("The Moon is made of cheese.", config={"max_concurrent_tools": bad})
    assert err.value.code == "BAD_CONFIG" and err.value.field == "config.max_concurrent_tools"
    assert eng.store.sessions() == []  # nothing stored


@pytest.mark.parametrize(("config", "expected"),
                         [({}, DEFAULT_CONCURRENT_TOOLS), ({"max_concurrent_tools": 3}, 3)])
def test_each_step_runs_with_the_sessions_setting(config: dict[str, Any],
                                                  expected: int) -> None:
    state = SessionState(sid="s", claim="c", fsm="RETRIEVAL", config=config)
    assert SessionLimits.build().executor_kwargs(state)["max_concurrent"] == expected


def test_the_cli_option_lands_in_the_sessions_config(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    res = CliRunner().invoke(main, ["start", "NASA landed on the Moon in 1969.", "--db", db,
                                    "--max-concurrent-tools", "2", "--json"])
    assert res.exit_code == 0, res.output
    sid = orjson.loads(res.output)["sid"]
    with Engine.open(db) as eng:
        assert eng.store.head(sid).state.config["max_concurrent_tools"] == 2
