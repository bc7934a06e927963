"""One error root, one code list: every exception class of the library derives from
``ClaimFsmError``, every code the source uses is an ``ErrorCode``, the CLI and the HTTP API
take their statuses from it, and errors say where (``field``, ``sid``, ``rev``)."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import pickle
import pkgutil
from pathlib import Path

import pytest

import claimfsm
from claimfsm import ClaimFsmError, ErrorCode
from claimfsm._base.errors import CODE_PATTERN, BadInput, exit_status, http_status
from claimfsm.skills.tools.core import ToolError
from tests.support.codes_in_use import codes_in_source, codes_in_use, members_named

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = (ROOT / "fsm", ROOT / "skills", ROOT / "state")
# The folders install as one package: fsm/ is claimfsm, the others its subpackages.
PACKAGES = {"claimfsm": ROOT / "fsm", "claimfsm.skills": ROOT / "skills",
            "claimfsm.state": ROOT / "state"}
BUILTIN_ERRORS = {name for name, value in vars(builtins).items()
                  if isinstance(value, type) and issubclass(value, BaseException)}


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        names += [info.name for info in pkgutil.walk_packages(path, package + ".")]
    return sorted(set(names))


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (inspect.isclass(value) and issubclass(value, BaseException)
                    and value.__module__ == module.__name__):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def test_every_exception_class_of_the_library_derives_from_the_one_root() -> None:
    classes = _exception_classes()
    # Not vacuous: the walk reaches all three folders and the private classes too.
    for known in ("claimfsm.state.errors.StoreError", "claimfsm.skills.tools.core.ToolError",
                  "claimfsm.state.codec_bytes.CodecError", "claimfsm.eval.data.DatasetError",
                  "claimfsm.skills.stance.model.ModelError", "claimfsm.engine.fold.StaleRev",
                  "claimfsm.skills.tools.outcome._Failure", "claimfsm._base.errors.BadInput"):
        assert known in classes
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, ClaimFsmError))
    assert outside == []


def test_no_exception_class_hides_where_the_module_walk_cannot_see_it() -> None:
    # A class statement inside a function is invisible to the walk above: there is none
    # deriving from a built-in exception (the root's subclasses are checked above).
    hidden = []
    for folder in LIBRARY:
        for path in folder.rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            top = {id(node) for node in tree.body}
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and id(node) not in top:
                    bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                    if bases & (BUILTIN_ERRORS | {"ClaimFsmError"}):
                        hidden.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert hidden == []


def test_every_error_class_carries_a_code_of_the_list() -> None:
    for name, cls in _exception_classes().items():
        assert isinstance(getattr(cls, "code", None), ErrorCode), name


def test_every_code_the_source_uses_is_in_the_list() -> None:
    found = codes_in_use(*LIBRARY)
    # Not vacuous: the scan sees envelope, tool, store, fsck, ingest, CLI and HTTP codes.
    assert {"NO_PLANS", "RATE_LIMITED", "REV_CONFLICT", "HASH_MISMATCH", "MISSING_FIELD",
            "OPEN_FAILED", "METHOD_NOT_ALLOWED", "RETRY_EXHAUSTED"} <= set(found)
    missing = {code: uses[:3] for code, uses in found.items() if code not in ErrorCode.__members__}
    assert missing == {}, "add these codes to ErrorCode (claimfsm/_base/codes.py)"


def test_the_scan_flags_a_code_outside_the_list() -> None:
    source = ('def f(inp):\n    return Envelope.error("NOT_A_REAL_CODE", "x")\n'
              'raise ToolError("m", code="ALSO_MADE_UP")\n'
              'fail("MADE_UP_TOO", "m", as_json=False)\n')
    found = codes_in_source(source)
    assert set(found) == {"NOT_A_REAL_CODE", "ALSO_MADE_UP", "MADE_UP_TOO"}
    assert not set(found) & set(ErrorCode.__members__)


def test_every_code_of_the_list_is_used() -> None:
    used = set(codes_in_use(*LIBRARY)) | members_named(*LIBRARY, skip=("cli/docs.py",))
    assert [code for code in ErrorCode if code not in used] == []


def test_codes_are_their_own_names_and_say_what_they_mean() -> None:
    assert len(ErrorCode) > 90
    for code in ErrorCode:
        assert code.value == code.name == str(code) and CODE_PATTERN.match(code)
        assert ErrorCode(code.name) is code and hash(code) == hash(code.name)
        assert code.meaning and code.meaning == code.meaning.strip()
        assert code.exit in (None, 0, 1, 2, 3, 130)
        assert code.http in (401, 403, 404, 405, 408, 409, 413, 415, 421, 422, 429, 500, 501,
                             502, 503, 504)


def test_statuses_come_from_the_list() -> None:
    assert (exit_status("BAD_INPUT"), http_status("BAD_INPUT")) == (2, 422)
    assert (exit_status("INTERRUPTED"), exit_status("NO_PLANS")) == (130, 1)
    assert (http_status("UNKNOWN_SESSION"), http_status("STORE_BUSY")) == (404, 503)
    # A custom code (a user's skill or tool) stops a command with 2 and is a 500.
    assert (exit_status("MY_OWN_CODE"), http_status("MY_OWN_CODE")) == (2, 500)
    # Codes carried inside a 200 answer still say what they would mean as an error.
    assert (http_status("NO_PLANS"), http_status("MODEL_TIMEOUT")) == (422, 504)


def test_the_cli_stops_with_2_on_every_code_it_stops_on_as_before() -> None:
    stops: set[str] = set()
    for path in (ROOT / "fsm" / "cli").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("fail", "_stop")
                    and node.args and isinstance(node.args[0], ast.Constant)):
                stops.add(node.args[0].value)
    assert {"NOT_FOUND", "BAD_INPUT", "INTERNAL", "INTERRUPTED", "RECORD_MISMATCH"} <= stops
    # Raised errors reach fail() too; the tool runtime's become failed calls instead.
    stops |= {str(cls.code) for cls in _exception_classes().values()
              if issubclass(cls, ClaimFsmError) and not issubclass(cls, ToolError)}
    assert {code: exit_status(code) for code in stops if exit_status(code) != 2} == {
        "INTERRUPTED": 130}


def test_the_api_reference_lists_each_code_under_its_status() -> None:
    from claimfsm.ui.openapi import openapi

    for ops in openapi()["paths"].values():
        for op in ops.values():
            for status, answer in op["responses"].items():
                if status.startswith("2"):
                    continue
                named = answer["description"].split(", ")
                assert named and all(code in ErrorCode.__members__ for code in named)
                assert {c: http_status(c) for c in named} == dict.fromkeys(named, int(status))


def test_typed_attributes_say_where() -> None:
    from claimfsm.engine.errors import check_claim
    from claimfsm.state.contract import make_revision
    from claimfsm.state.errors import RevConflict, UnknownRevision, UnknownSession
    from claimfsm.state.memory import MemoryStore

    store = MemoryStore()
    store.create(make_revision("s1", 0))
    with pytest.raises(UnknownSession) as unknown:
        store.head("nope")
    assert (unknown.value.code, unknown.value.sid) == ("UNKNOWN_SESSION", "nope")
    with pytest.raises(UnknownRevision) as revision:
        store.get("s1", 7)
    assert (revision.value.sid, revision.value.rev) == ("s1", 7)
    with pytest.raises(RevConflict) as conflict:
        store.commit(make_revision("s1", 3), expected_rev=2)
    assert (conflict.value.sid, conflict.value.expected, conflict.value.head) == ("s1", 2, 0)
    with pytest.raises(BadInput) as bad:
        check_claim("caf\udce9")
    assert (bad.value.code, bad.value.field) == ("BAD_INPUT", "claim")
    assert bad.value.context == {"field": "claim"}


def test_engine_errors_name_the_session_and_the_field() -> None:
    from claimfsm.engine.errors import InputTooLarge, SessionFinished
    from claimfsm.engine.runtime import Engine
    from claimfsm.skills.limits import MAX_CLAIM_CHARS

    with Engine.open(None) as eng:
        with pytest.raises(InputTooLarge) as large:
            eng.start("x" * (MAX_CLAIM_CHARS + 1))
        assert (large.value.field, large.value.limit) == ("claim", MAX_CLAIM_CHARS)
        head = eng.driver.run(eng.start("Water boils at 100 degrees.").sid)
        with pytest.raises(SessionFinished) as finished:
            eng.driver.step(head.sid)
        assert finished.value.sid == head.sid and finished.value.field is None


def test_tool_and_profile_errors_name_their_field(tmp_path: Path) -> None:
    from claimfsm.engine.profile import ProfileError, resolve_profile
    from claimfsm.skills.plan_steps import validate_params
    from claimfsm.skills.tools.builtin import builtin_tools
    from claimfsm.skills.tools.core import ParameterError
    from claimfsm.skills.tools.index import EvidenceIndex
    from claimfsm.skills.tools.registry import ToolRegistry

    with EvidenceIndex.open(":memory:") as index, pytest.raises(ParameterError) as param:
        validate_params(ToolRegistry(builtin_tools(index)), "search", {"q": "x", "lim": 10**6})
    assert (param.value.code, param.value.field, param.value.tool) == (
        "BAD_ARGS", "params.lim", "search")
    with pytest.raises(ProfileError) as profile:
        resolve_profile({"stance_model": tmp_path / "none.npz"}, use_config=False)
    assert (profile.value.code, profile.value.field) == ("MODEL_NOT_FOUND", "stance_model")


def test_errors_cross_processes_whole() -> None:
    from claimfsm.engine.errors import MachineDefinitionError
    from claimfsm.replay.record import RecordError
    from claimfsm.skills.stance.model import ModelError
    from claimfsm.skills.tools.core import ToolDefinitionError
    from claimfsm.state.errors import RevConflict

    errors: list[ClaimFsmError] = [
        RevConflict("head moved", sid="s", expected=2, head=3),
        ModelError("BAD_MODEL", "stance_model: x.npz is not a model"),
        ToolDefinitionError("search", "handler must be callable"),
        RecordError("bad line", line=3, source="r.jsonl"),
        MachineDefinitionError("machine 'm' is invalid: no states", problems=["no states"]),
        ToolError("boom", code="MY_CODE", context={"a": 1}),
    ]
    for error in errors:
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)
        assert (copy.code, copy.msg, copy.context) == (error.code, error.msg, error.context)


def test_errors_that_were_built_in_ones_still_are() -> None:
    from claimfsm.engine.machine import DEFAULT_MACHINE
    from claimfsm.skills.tools.core import ToolResult
    from claimfsm.state.codec import CodecError

    assert issubclass(CodecError, ValueError) and issubclass(BadInput, ValueError)
    with pytest.raises(ValueError, match="UPPER_SNAKE") as info:
        ToolResult.error("nope", code="lower")
    assert isinstance(info.value, ClaimFsmError) and info.value.field == "code"
    with pytest.raises(KeyError) as lookup:
        DEFAULT_MACHINE.state("NOPE")
    assert isinstance(lookup.value, ClaimFsmError) and lookup.value.code == "MACHINE_MISMATCH"
    assert str(lookup.value) == "machine 'claim_verification' has no state 'NOPE'"


def test_the_front_door_exports_the_root_and_the_codes() -> None:
    assert claimfsm.ClaimFsmError is ClaimFsmError and claimfsm.ErrorCode is ErrorCode
    assert ClaimFsmError("m").to_dict() == {"code": "CLAIMFSM_ERROR", "msg": "m"}
