"""Fuzzing the commands that read a user's files: ``batch`` (claims files and its
options), ``ingest`` (folders of files, folders and links, and its options), ``eval`` and
``train`` (datasets and their options) and ``bench`` (its options and ``--json`` paths,
the benchmarks themselves stubbed out). Nothing may raise or print a traceback; the
answer is an exit of 0, 1 or 2 with a stable code; a refused input leaves nothing
behind, and a file of ours is never read through a link out of an ingested folder.

`make test` runs a dozen examples per target; `make fuzz` (CLAIMFSM_FUZZ=1) 1,000.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any, ClassVar

import orjson
import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from claimfsm import ErrorCode
from claimfsm.cli.main import main
from claimfsm.engine.runtime import FIXTURES
from claimfsm.skills.tools.index import EvidenceIndex
from tests.support.components import missing
from tests.test_fuzz import CLI_COMMAND_EXAMPLES, SLOW, json_value

DEMO = [c["claim"] for c in json.loads((FIXTURES / "demo_claims.json").read_text())]
CORPUS = Path(__file__).resolve().parent / "data" / "eval_corpus.jsonl"
SECRET = "zebrafinchsecret"  # in a file outside every ingested folder; never indexed

hostile = st.sampled_from(["-1", "0", "1", "nan", "inf", "1e309", "99999999999999999999",
                           "", "\x00", "../x", "x"])
text = st.text(st.characters(codec="utf-8"), max_size=40)
claim_id = st.one_of(st.integers(-5, 2**70), text, st.booleans(), st.none())
claim_line = st.one_of(
    st.fixed_dictionaries({"id": claim_id, "claim": st.one_of(text, st.sampled_from(DEMO),
                                                              st.just("x" * 1001))}),
    json_value)
line = st.one_of(st.binary(max_size=60), claim_line.map(lambda v: orjson.dumps(
    v, option=orjson.OPT_NON_STR_KEYS) if _dumpable(v) else b"{}"))


def _dumpable(value: Any) -> bool:
    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return False
    return True


def invoke(argv: list[str]) -> tuple[Result, str | None]:
    """Run the CLI; the error code it printed, if any. Never a traceback."""
    res = CliRunner().invoke(main, argv)
    assert res.exception is None or isinstance(res.exception, SystemExit), (argv, res.exception)
    assert res.exit_code in (0, 1, 2, 130), (argv, res.output)
    assert "Traceback" not in res.output, argv
    found = re.search(r"error: ([A-Z][A-Z0-9_]*): ", res.output)
    code = found.group(1) if found else None
    if code is None and res.stdout.startswith("{"):
        error = orjson.loads(res.stdout).get("error")  # --json: the error as JSON
        code = error["code"] if error else None
    if code is not None:
        assert code in ErrorCode.__members__ and code != "INTERNAL", (argv, res.output)
    return res, code


# Codes that refuse an input before anything runs: no store may be created for them.
BEFORE = {"BAD_CLAIMS", "BAD_OPTION", "TOO_MANY_WORKERS", "OUT_WRITE_FAILED", "BAD_INPUT",
          "RAY_UNAVAILABLE"}


@settings(max_examples=CLI_COMMAND_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(lines=st.lists(line, max_size=5), workers=st.sampled_from(
    ["0", "0", "-1", "x", "1000000", "99999999999999999999"]),
    out=st.sampled_from([None, "fresh", "foreign", "folder", "nodir"]),
    ray=st.sampled_from([None, None, "127.0.0.1:1"]))
def test_batch_with_hostile_claims_files_and_options(
        tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], workers: str,
        out: str | None, ray: str | None) -> None:
    work = tmp_path_factory.mktemp("batch")
    src, db = work / "c.jsonl", work / "b.db"
    src.write_bytes(b"\n".join(x.replace(b"\n", b" ") for x in lines) + b"\n")
    argv = ["batch", str(src), "--db", str(db), "--workers", workers, "--json"]
    foreign = work / "foreign.csv"
    foreign.write_bytes(b"name,score\nalice,3\n")
    (work / "folder").mkdir()
    target = {"fresh": work / "out.jsonl", "foreign": foreign, "folder": work / "folder",
              "nodir": work / "nodir" / "out.jsonl", None: None}[out]
    if target is not None:
        argv += ["--out", str(target)]
    if ray is not None:
        argv += ["--ray", ray]
    res, code = invoke(argv)
    if code in BEFORE or (res.exit_code == 2 and code is None):
        assert not db.exists(), (argv, res.output)
    assert foreign.read_bytes() == b"name,score\nalice,3\n"
    if res.exit_code in (0, 1) and target == work / "out.jsonl":
        got = [orjson.loads(x) for x in target.read_bytes().splitlines()]
        assert len({orjson.dumps(g["id"]) for g in got}) == len(got)  # one line per id


entry = st.tuples(st.lists(st.sampled_from(["a", "b", "c.txt", "d.md", "e.bin"]),
                           min_size=1, max_size=4),
                  st.sampled_from(["file", "file", "dir", "link-in", "link-out", "link-up",
                                   "fifo"]),
                  st.one_of(st.binary(max_size=40), text.map(str.encode)))


def _build(root: Path, outside: Path, entries: list[tuple[list[str], str, bytes]]) -> None:
    for parts, kind, content in entries:
        path = root.joinpath(*parts)
        if os.path.lexists(path):
            continue  # writing into a named pipe made earlier would wait for a reader
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if kind == "file":
                path.write_bytes(content)
            elif kind == "dir":
                path.mkdir(exist_ok=True)
            elif kind == "link-in":
                path.symlink_to(root)
            elif kind == "link-out":
                path.symlink_to(outside)
            elif kind == "link-up":
                path.symlink_to(outside.parent)
            elif hasattr(os, "mkfifo"):
                os.mkfifo(path)
        except OSError:
            pass  # a name taken by another kind of entry: the tree is what it is


@settings(max_examples=CLI_COMMAND_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(entries=st.lists(entry, max_size=8), max_doc=st.one_of(hostile, st.just("20")),
       source=st.sampled_from([None, "web", "bogus"]), kb=st.booleans())
def test_ingest_folders_of_anything(tmp_path_factory: pytest.TempPathFactory,
                                    entries: list[tuple[list[str], str, bytes]],
                                    max_doc: str, source: str | None, kb: bool) -> None:
    work = tmp_path_factory.mktemp("ing")
    outside = work / "secret.txt"
    outside.write_text(f"The {SECRET} is here.")
    root = work / "docs"
    root.mkdir()
    _build(root, outside, entries)
    db = work / "i.db"
    argv = ["ingest", str(root), "--db", str(db), "--json", "--no-embed",
            "--max-doc-bytes", max_doc, *(["--source", source] if source else []),
            *(["--kb"] if kb else [])]
    res, _ = invoke(argv)
    assert res.exit_code in (0, 2), (argv, res.output)
    if res.exit_code == 0:
        body = orjson.loads(res.stdout)
        assert body["added"] + body["unchanged"] + body["skipped"] == body["lines"]
        assert sum(body["codes"].values()) == body["skipped"]
    if db.exists():
        with EvidenceIndex(sqlite3.connect(db)) as index:
            assert index.search(SECRET) == []


dataset_line = st.one_of(
    st.fixed_dictionaries({
        "claim_id": st.one_of(text, st.integers(), st.none()),
        "claim": st.one_of(text, st.sampled_from(DEMO), st.just("x" * 1001)),
        "claim_label": st.sampled_from(["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO",
                                        "DISPUTED", "maybe"]),
        "evidences": st.one_of(json_value, st.lists(st.fixed_dictionaries({
            "evidence_id": text, "evidence": st.one_of(text, st.sampled_from(DEMO)),
            "evidence_label": st.sampled_from(["SUPPORTS", "REFUTES", "NOT_ENOUGH_INFO",
                                               "x"])}), max_size=3))}),
    json_value)
dataset = st.lists(st.one_of(st.binary(max_size=60), dataset_line.map(
    lambda v: orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS) if _dumpable(v) else b"[]")),
    max_size=6)


@settings(max_examples=CLI_COMMAND_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(rows=dataset, limit=st.one_of(st.none(), hostile))
def test_eval_with_hostile_datasets(tmp_path_factory: pytest.TempPathFactory,
                                    rows: list[bytes], limit: str | None) -> None:
    path = tmp_path_factory.mktemp("eval") / "d.jsonl"
    path.write_bytes(b"\n".join(r.replace(b"\n", b" ") for r in rows) + b"\n")
    invoke(["eval", str(path), "--corpus", str(CORPUS), "--json",
            *(["--limit", limit] if limit is not None else [])])


@settings(max_examples=CLI_COMMAND_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(rows=dataset, folds=st.one_of(st.none(), hostile, st.just("2")))
def test_train_with_hostile_datasets(tmp_path_factory: pytest.TempPathFactory,
                                     rows: list[bytes], folds: str | None) -> None:
    try:
        import numpy  # noqa: F401
    except ImportError:
        missing("numpy", "numpy is not installed (pip install -e '.[dev]')")
    work = tmp_path_factory.mktemp("train")
    path, out = work / "d.jsonl", work / "m.npz"
    path.write_bytes(b"\n".join(r.replace(b"\n", b" ") for r in rows) + b"\n")
    res, _ = invoke(["train", str(path), "--out", str(out), "--json",
                     *(["--folds", folds] if folds is not None else [])])
    if res.exit_code == 0:
        from claimfsm.skills.stance.model import load_model

        load_model(out)  # whatever it wrote loads: no NaN, arrays that fit
    else:
        assert not out.exists()


bench_arg = st.one_of(hostile, st.sampled_from(
    ["--quick", "--reps", "--json", "--dir", "batch", "ui", "--claims", "--repeat",
     "JSON:ok", "JSON:nodir", "JSON:folder", "JSON:full"]))


@settings(max_examples=CLI_COMMAND_EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(args=st.lists(bench_arg, max_size=5))
def test_bench_options_and_json_paths(tmp_path_factory: pytest.TempPathFactory,
                                      monkeypatch: pytest.MonkeyPatch,
                                      args: list[str]) -> None:
    import claimfsm.batch.bench as batch_bench
    import claimfsm.bench.run as engine_bench

    ran: list[str] = []

    class Report:
        meta: ClassVar[dict[str, Any]] = {"cpus": 2, "python": "3", "sqlite": "3",
                                          "platform": "x", "reps": 1, "seconds": 0.0}

        def to_json(self) -> dict[str, Any]:
            return {}

    def stub(name: str, value: Any) -> Any:
        return lambda *a, **k: ran.append(name) or value

    monkeypatch.setattr(engine_bench, "run_bench", stub("engine", Report()))
    monkeypatch.setattr(engine_bench, "format_table", lambda r: "")
    monkeypatch.setattr(batch_bench, "run_bench", stub("batch", {"goals": {}}))
    monkeypatch.setattr(batch_bench, "format_table", lambda r: "")
    work = tmp_path_factory.mktemp("bench")
    monkeypatch.chdir(work)  # a hostile value after --json is a file name written here
    (work / "folder").mkdir()
    where = {"JSON:ok": str(work / "x.json"), "JSON:nodir": str(work / "nodir" / "x.json"),
             "JSON:folder": str(work / "folder"), "JSON:full": "/dev/full"}
    argv = ["bench", *[where.get(a, a) for a in args]]
    if "ui" in argv:  # the inspector benchmark builds a store: only its refusals here
        argv = [a for a in argv if a != "ui"]
    _, code = invoke(argv)
    if code == "NOT_FOUND":
        assert ran == [] and not (work / "nodir").exists()
