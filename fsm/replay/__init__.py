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
    RecordLimits,
    RecordTampered,
    RecordTooLarge,
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
    Replayable,
    ReplayReport,
    replay_record,
)
from claimfsm.replay.seal import HashChain
from claimfsm.replay.source import RecordFile, find_records, open_record
from claimfsm.replay.store import ReplayStore
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
    "HashChain",
    "Header",
    "Mode",
    "Outcome",
    "Record",
    "RecordError",
    "RecordFile",
    "RecordLimits",
    "RecordTampered",
    "RecordTooLarge",
    "RecordWriteError",
    "RecordedTools",
    "Recorder",
    "ReplayClock",
    "ReplayReport",
    "ReplayStore",
    "Replayable",
    "Rewind",
    "Step",
    "Unrecorded",
    "encode_line",
    "engine_record",
    "engine_tools",
    "engine_version",
    "export_record",
    "find_records",
    "first_diff",
    "header_for",
    "join_path",
    "open_record",
    "parse_record",
    "read_record",
    "replay_record",
    "runtime_from_info",
    "step_from_result",
    "tools_info",
]
