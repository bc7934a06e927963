"""Record and replay: the record file format, the writer behind ``--record`` and
``claimfsm export``, strict/tools/live replay with divergence reports, and the recorded
tool runtime and clock replay answers from.

Part of fsm's tools: it may import the engine core (``claimfsm.engine.driver``,
``claimfsm.engine.machine``,
``claimfsm.engine.bindings``, ...), ``skills`` and ``state``; never ``claimfsm.cli``,
``claimfsm.eval``,
``claimfsm.bench`` or ``claimfsm.testing``. The core never imports this package.
"""

from claimfsm.replay.diff import ABSENT, first_diff, join_path
from claimfsm.replay.record import (
    FORMAT_VERSION,
    End,
    Entry,
    Header,
    Record,
    RecordError,
    Rewind,
    Step,
    encode_line,
    engine_version,
    parse_record,
    read_record,
)
from claimfsm.replay.runner import (
    MODES,
    Divergence,
    Mode,
    Outcome,
    ReplayReport,
    replay_record,
)
from claimfsm.replay.tools import RecordedTools, ReplayClock, Unrecorded, runtime_from_info
from claimfsm.replay.write import (
    Recorder,
    RecordWriteError,
    engine_record,
    engine_tools,
    export_record,
    header_for,
    step_from_result,
    tools_info,
)

__all__ = [
    "ABSENT",
    "FORMAT_VERSION",
    "MODES",
    "Divergence",
    "End",
    "Entry",
    "Header",
    "Mode",
    "Outcome",
    "Record",
    "RecordError",
    "RecordWriteError",
    "RecordedTools",
    "Recorder",
    "ReplayClock",
    "ReplayReport",
    "Rewind",
    "Step",
    "Unrecorded",
    "encode_line",
    "engine_record",
    "engine_tools",
    "engine_version",
    "export_record",
    "first_diff",
    "header_for",
    "join_path",
    "parse_record",
    "read_record",
    "replay_record",
    "runtime_from_info",
    "step_from_result",
    "tools_info",
]
