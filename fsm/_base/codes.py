"""The stable error codes: one :class:`ErrorCode` member per code claimfsm uses.

A code is what a program keys on: an envelope's ``e.code``, a failed tool call's code,
``error: CODE: msg`` from the CLI, ``{"error": {"code"}}`` from the HTTP API, a store's
error, a broken link reported by ``fsck``. Each member carries what it means, the CLI's
exit status and the HTTP status for it; the CLI, the HTTP API and ``docs/errors.md`` all
read them from here. Custom skills and tools may use codes of their own (any
UPPER_SNAKE string, :data:`CODE_PATTERN`); this list is the library's.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

__all__ = ["CODE_PATTERN", "ErrorCode", "as_code", "exit_status", "http_status"]

CODE_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]*$")
"""What any code must look like (the envelope's ``e.code`` accepts only this)."""

# Status values of the columns below. ``None`` for ``exit``: no command reports the code.
# Every code has an HTTP status, also those the API only carries inside a 200 answer (a
# step's envelope, a chain check): should one ever be raised to the API, it answers with
# the status that code means rather than a bare 500 (tests/ui walk the whole list).
_STOP = 2      # a command stops with ``error: CODE: msg``
_ANSWER = 1    # a step, skill, fsck or batch that reports it (not ok) exits 1
_SKIPPED = 0   # a line ingest reports and skips


class ErrorCode(StrEnum):
    """Every stable code of the library, with ``meaning``, ``exit`` and ``http``."""

    _meaning: str
    _exit: int | None
    _http: int

    # A member is ``NAME = "NAME", exit, http, meaning``. The value is the name, spelled
    # out rather than made by ``auto()`` (which takes part in a tuple only from 3.11.1):
    # so a member equals, and hashes as, its string, and ``"NAME" in codes`` just works.
    def __new__(cls, *spec: Any) -> ErrorCode:
        value, exit_, http, meaning = spec
        obj = str.__new__(cls, value)
        obj._value_ = value
        obj._meaning, obj._exit, obj._http = meaning, exit_, http
        return obj

    @property
    def meaning(self) -> str:
        """What the code says happened, in one line."""
        return self._meaning

    @property
    def exit(self) -> int | None:
        """The CLI's exit status when a command reports the code (``None``: none does)."""
        return self._exit

    @property
    def http(self) -> int:
        """The HTTP status of an API error with the code (every code has one)."""
        return self._http

    # -- the engine: contract errors (raised) --------------------------------------------
    CLAIMFSM_ERROR = "CLAIMFSM_ERROR", _STOP, 500, "an error of claimfsm with no more precise code"
    BAD_INPUT = ("BAD_INPUT", _STOP, 422,
                 "an input the engine does not accept; the message names the field")
    INPUT_TOO_LARGE = ("INPUT_TOO_LARGE", _STOP, 413,
                       "an input over a documented limit (docs/limits.md)")
    BAD_MACHINE = ("BAD_MACHINE", _STOP, 500,
                   "a machine definition failed its checks (every problem listed)")
    ILLEGAL_TRANSITION = ("ILLEGAL_TRANSITION", _STOP, 409,
                          "a move the machine does not allow from the current state")
    MACHINE_MISMATCH = ("MACHINE_MISMATCH", _STOP, 409,
                        "the session is in a state the machine does not define")
    SESSION_FINISHED = ("SESSION_FINISHED", _STOP, 409,
                        "a step was asked of a session in a final state")
    SESSION_FAILED = "SESSION_FAILED", _STOP, 409, "a rollback of a FAILED session without --reopen"
    UNKNOWN_SKILL = ("UNKNOWN_SKILL", _STOP, 500,
                     "a state binds, or a command names, a skill nobody registered")
    BAD_CONFIG = "BAD_CONFIG", _STOP, 422, "a session's limits or the config file are malformed"
    BAD_PROFILE = "BAD_PROFILE", _STOP, 422, "a verification profile with a bad value"
    MODEL_NOT_FOUND = "MODEL_NOT_FOUND", _STOP, 422, "the stance model file does not exist"
    MODEL_UNAVAILABLE = "MODEL_UNAVAILABLE", _STOP, 422, "no usable stance model at that path"
    BAD_MODEL = "BAD_MODEL", _STOP, 422, "a stance model file that cannot be read or does not fit"
    SEMANTIC_UNAVAILABLE = ("SEMANTIC_UNAVAILABLE", _STOP, 422,
                            "hybrid retrieval needs the 'semantic' extra")
    INTERNAL = ("INTERNAL", _STOP, 500,
                "a bug: an unexpected exception, reported instead of a traceback")
    # -- the engine: a step's answer -------------------------------------------------------
    RETRY_NOT_DUE = "RETRY_NOT_DUE", _ANSWER, 409, "a retry asked for before its backoff deadline"
    RETRY_EXHAUSTED = ("RETRY_EXHAUSTED", _ANSWER, 500,
                       "a state's retries are spent: the session moved to FAILED")
    DEADLINE_EXCEEDED = ("DEADLINE_EXCEEDED", _ANSWER, 504,
                         "the session's or a call's deadline passed")
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED", _ANSWER, 429, "the session's tool-call budget is spent"
    # -- skills: error envelopes -----------------------------------------------------------
    NO_CLAIMS = "NO_CLAIMS", _ANSWER, 422, "no (usable) claim or subclaim to work on"
    DUPLICATE_CLAIM = "DUPLICATE_CLAIM", _ANSWER, 422, "two subclaims with the same id"
    QUERY_TOO_LONG = "QUERY_TOO_LONG", _ANSWER, 422, "a planned query over the token limit"
    NO_PLANS = "NO_PLANS", _ANSWER, 422, "no query plans to compose or run"
    BAD_SRC = "BAD_SRC", _ANSWER, 422, "a query plan without a source"
    BAD_PLAN = "BAD_PLAN", _ANSWER, 422, "a plan of tool steps that cannot run (ids, dependencies)"
    TOOLS_UNAVAILABLE = ("TOOLS_UNAVAILABLE", _ANSWER, 500,
                         "a skill that calls tools got no tool runtime")
    NO_JUDGMENTS = "NO_JUDGMENTS", _ANSWER, 422, "nothing to aggregate: no judgments"
    UNKNOWN_CLAIM = "UNKNOWN_CLAIM", _ANSWER, 422, "a judgment for a claim id that does not exist"
    DUPLICATE_JUDGMENT = "DUPLICATE_JUDGMENT", _ANSWER, 422, "a claim judged twice"
    SCRIPT_EXHAUSTED = ("SCRIPT_EXHAUSTED", _ANSWER, 500,
                        "a scripted skill (claimfsm.testing) has no answer left")
    # -- tools: failed calls ---------------------------------------------------------------
    TOOL_ERROR = "TOOL_ERROR", _STOP, 500, "a tool failed (the message says how)"
    TOOL_DEFINITION = ("TOOL_DEFINITION", _STOP, 500,
                       "a malformed tool, or a tool bound but not registered")
    TOOL_TYPE_ERROR = "TOOL_TYPE_ERROR", _ANSWER, 500, "a tool handler raised TypeError"
    TOOL_TIMEOUT = ("TOOL_TIMEOUT", _ANSWER, 504,
                    "a tool timed out (the default machine retries it)")
    TOOL_FAILED = "TOOL_FAILED", _ANSWER, 502, "a page fetch failed; the document was skipped"
    BAD_ARGS = ("BAD_ARGS", _STOP, 422,
                "arguments a tool or command refuses; the message names the field")
    UNKNOWN_TOOL = "UNKNOWN_TOOL", _ANSWER, 500, "a call of a tool nobody registered"
    QUERY_TYPE_UNSUPPORTED = ("QUERY_TYPE_UNSUPPORTED", _ANSWER, 422,
                              "a query kind the tool does not handle")
    MISSING_RESOURCE = ("MISSING_RESOURCE", _ANSWER, 500,
                        "a tool needs a resource the runtime does not have")
    OUTPUT_PATH_MISSING = ("OUTPUT_PATH_MISSING", _ANSWER, 500,
                           "a result lacks the part its step keeps")
    RATE_LIMITED = ("RATE_LIMITED", _ANSWER, 429,
                    "a tool's rate limit is reached (retried, or its fallback runs)")
    CONCURRENCY_LIMITED = ("CONCURRENCY_LIMITED", _ANSWER, 429,
                           "a tool's concurrency limit is reached")
    POLICY_DENIED = "POLICY_DENIED", _ANSWER, 403, "a tool policy refused the call"
    BAD_TOOL_RESULT = "BAD_TOOL_RESULT", _ANSWER, 502, "a tool answered with a malformed result"
    INDEX_ERROR = ("INDEX_ERROR", _ANSWER, 500,
                   "the evidence index failed (ingest reports it as STORE_IO)")
    UNRECORDED_TOOL_CALL = ("UNRECORDED_TOOL_CALL", _ANSWER, 422,
                            "a replay made a call the record does not hold")
    # -- HTTP search backends ([sources.NAME] in claimfsm.toml): a failed call, as data --
    HTTP_TIMEOUT = "HTTP_TIMEOUT", _ANSWER, 504, "a search backend did not answer in time"
    HTTP_UNREACHABLE = ("HTTP_UNREACHABLE", _ANSWER, 502,
                        "a search backend refused or dropped the connection")
    HTTP_STATUS = ("HTTP_STATUS", _ANSWER, 502,
                   "a search backend answered with an HTTP error status")
    HTTP_NOT_JSON = ("HTTP_NOT_JSON", _ANSWER, 502,
                     "a search backend answered with HTML or other text, not JSON")
    HTTP_TOO_LARGE = ("HTTP_TOO_LARGE", _ANSWER, 502,
                      "a search backend's answer is over the size limit (max_bytes)")
    HTTP_MALFORMED = ("HTTP_MALFORMED", _ANSWER, 502,
                      "a search backend's JSON lacks the fields its kind promises")
    UNSCRIPTED_TOOL_CALL = ("UNSCRIPTED_TOOL_CALL", _ANSWER, 500,
                            "a scripted tool (claimfsm.testing) has no answer")
    NOT_FOUND = "NOT_FOUND", _STOP, 404, "a file, document or route that does not exist"
    # -- stores ----------------------------------------------------------------------------
    STORE_ERROR = "STORE_ERROR", _STOP, 500, "the session store failed (the message says how)"
    REV_CONFLICT = ("REV_CONFLICT", _STOP, 409,
                    "the head moved: a stale compare-and-set (expected_rev)")
    UNKNOWN_SESSION = "UNKNOWN_SESSION", _STOP, 404, "no session with that id"
    UNKNOWN_REVISION = "UNKNOWN_REVISION", _STOP, 404, "the session has no such revision"
    UNKNOWN_DB = "UNKNOWN_DB", _STOP, 500, "--db names no store, and the command only reads"
    STORE_BUSY = "STORE_BUSY", _STOP, 503, "the database stayed locked by other writers too long"
    STORE_CORRUPT = ("STORE_CORRUPT", _STOP, 500,
                     "stored bytes that do not decode (run claimfsm fsck)")
    CHAIN_BROKEN = "CHAIN_BROKEN", _STOP, 500, "a copy (fork, compact) found a broken hash chain"
    STORE_FOREIGN = "STORE_FOREIGN", _STOP, 500, "--db is another program's SQLite database"
    STORE_NOT_DATABASE = ("STORE_NOT_DATABASE", _STOP, 500,
                          "--db is damaged or not a SQLite database")
    STORE_IO = "STORE_IO", _STOP, 500, "--db cannot be opened, read or written"
    STORE_FULL = ("STORE_FULL", _STOP, 503,
                  "the store's disk or quota is full; it stays at its last commit: free space")
    STORE_READ_ONLY = ("STORE_READ_ONLY", _STOP, 503,
                       "--db, its folder, its file system or the server is read-only")
    STORE_UNAVAILABLE = "STORE_UNAVAILABLE", _STOP, 500, "the PostgreSQL server cannot be reached"
    # -- fsck: the first broken link of a session's hash chain -------------------------------
    REV_GAP = "REV_GAP", _ANSWER, 500, "a revision is missing from the chain"
    MISSING_PARENT = ("MISSING_PARENT", _ANSWER, 500,
                      "a revision's parent_rev is not the one before it")
    UNDECODABLE = "UNDECODABLE", _ANSWER, 500, "a revision's stored bytes do not decode"
    SID_MISMATCH = ("SID_MISMATCH", _ANSWER, 500,
                    "a revision's state is stamped with another session id")
    HASH_MISMATCH = "HASH_MISMATCH", _ANSWER, 500, "a stored hash differs from the recomputed one"
    HEAD_MISMATCH = "HEAD_MISMATCH", _ANSWER, 500, "the head is not the session's last revision"
    MISSING_BLOB = "MISSING_BLOB", _ANSWER, 500, "a blob a revision references is missing"
    BLOB_CORRUPT = "BLOB_CORRUPT", _ANSWER, 500, "a blob does not decode or match its hash"
    FORK_PARENT_MISSING = ("FORK_PARENT_MISSING", _ANSWER, 500,
                           "revisions a fork shares with its parent are missing")
    # -- ingest: a line or file reported and skipped -----------------------------------------
    BAD_LINE = "BAD_LINE", _SKIPPED, 422, "a line that cannot be ingested"
    BAD_JSON = "BAD_JSON", _SKIPPED, 422, "a line that is not JSON"
    NOT_OBJECT = "NOT_OBJECT", _SKIPPED, 422, "a line that is not a JSON object"
    MISSING_FIELD = "MISSING_FIELD", _SKIPPED, 422, "a required field is missing"
    WRONG_TYPE = "WRONG_TYPE", _SKIPPED, 422, "a field of the wrong type"
    EMPTY_FIELD = "EMPTY_FIELD", _SKIPPED, 422, "a required field, or a file, is empty"
    BAD_SOURCE = "BAD_SOURCE", _SKIPPED, 422, "an unknown source tag"
    NOT_UTF8 = "NOT_UTF8", _SKIPPED, 422, "a file that is not UTF-8 text"
    DUPLICATE_ID = ("DUPLICATE_ID", _SKIPPED, 422,
                    "a line whose id an earlier line of the same file has (the first wins)")
    OUTSIDE_FOLDER = ("OUTSIDE_FOLDER", _SKIPPED, 422,
                      "a symbolic link that leads out of the ingested folder: not read")
    UNREADABLE = "UNREADABLE", _STOP, 422, "the input file cannot be read: ingest stops"
    # -- replay and records ------------------------------------------------------------------
    BAD_RECORD = ("BAD_RECORD", _STOP, 422,
                  "a session record that cannot be read (the line is named)")
    RECORD_TAMPERED = ("RECORD_TAMPERED", _STOP, 422,
                       "a record line edited after it was written (line and field named)")
    RECORD_MISMATCH = "RECORD_MISMATCH", _STOP, 422, "--record names a record of another session"
    RECORD_WRITE_FAILED = ("RECORD_WRITE_FAILED", _STOP, 500,
                           "the session record could not be written")
    NO_RECORDS = "NO_RECORDS", _STOP, 404, "no *.jsonl records under the path"
    # -- eval and train ----------------------------------------------------------------------
    BAD_DATASET = ("BAD_DATASET", _STOP, 422,
                   "a dataset line that cannot be read (line and field named)")
    EMPTY_DATASET = "EMPTY_DATASET", _STOP, 422, "a dataset without claims"
    EMPTY_CORPUS = "EMPTY_CORPUS", _STOP, 422, "a corpus without a usable sentence"
    TOO_FEW_CLAIMS = "TOO_FEW_CLAIMS", _STOP, 422, "fewer claims than cross-validation folds"
    NOTHING_TO_LEARN = ("NOTHING_TO_LEARN", _STOP, 422,
                        "training data a model cannot be fitted on (no pairs, one label, "
                        "a non-finite fit): nothing written")
    MISSING_DEPENDENCY = ("MISSING_DEPENDENCY", _STOP, 501,
                          "a command needs a package that is not installed")
    EMBEDDER_UNAVAILABLE = ("EMBEDDER_UNAVAILABLE", _STOP, 422,
                            "the named sentence embedder cannot be loaded")
    # -- batch -------------------------------------------------------------------------------
    BAD_CLAIMS = "BAD_CLAIMS", _STOP, 422, "a claims file that cannot be read or has bad lines"
    BAD_OPTION = "BAD_OPTION", _STOP, 422, "options that contradict each other"
    RAY_UNAVAILABLE = ("RAY_UNAVAILABLE", _STOP, 503,
                       "Ray cannot start, or the --ray cluster cannot be joined")
    TASK_FAILED = ("TASK_FAILED", _ANSWER, 500,
                   "a batch task failed in its worker (its line says why)")
    TOO_MANY_WORKERS = ("TOO_MANY_WORKERS", _STOP, 422,
                        "--workers above the CPUs Ray reports (the message says how many)")
    OUT_WRITE_FAILED = ("OUT_WRITE_FAILED", _STOP, 500,
                        "an output file (--out, a benchmark's --json) cannot be written, or "
                        "--out holds lines that are not batch results")
    INTERRUPTED = "INTERRUPTED", 130, 503, "stopped by Ctrl-C; the same command resumes"
    # -- the command line and the HTTP API -------------------------------------------------
    OPEN_FAILED = "OPEN_FAILED", _STOP, 500, "--db cannot be opened (the system's reason follows)"
    NO_INDEX = ("NO_INDEX", _STOP, 422,
                "the command needs an evidence index the --db URL does not name")
    PORT_IN_USE = "PORT_IN_USE", _STOP, 500, "the UI's port is taken"
    UI_UNAVAILABLE = "UI_UNAVAILABLE", _STOP, 501, "the 'ui' extra is not installed"
    UI_FAILED = "UI_FAILED", _STOP, 500, "the UI server stopped with an error"
    REPORT_WRITE_FAILED = "REPORT_WRITE_FAILED", _STOP, 500, "the --html report cannot be written"
    # Traces and metrics (docs/operations.md).
    OTEL_UNAVAILABLE = ("OTEL_UNAVAILABLE", _STOP, 501,
                        "--otel needs the 'otel' extra (OpenTelemetry), which is not installed")
    METRICS_UNAVAILABLE = ("METRICS_UNAVAILABLE", _STOP, 501,
                           "--metrics-port needs prometheus-client (the 'ui' extra)")
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED", None, 405, "an HTTP method the route does not take"
    UNSUPPORTED_MEDIA_TYPE = ("UNSUPPORTED_MEDIA_TYPE", None, 415,
                              "a request body not sent as application/json")
    # The HTTP surface's own guards (docs/operations.md): refused before any handler runs.
    HOST_NOT_ALLOWED = ("HOST_NOT_ALLOWED", None, 421,
                        "a Host header the server is not bound to or configured for "
                        "(--allowed-host): a DNS-rebinding guard")
    CROSS_ORIGIN = ("CROSS_ORIGIN", None, 403,
                    "a state-changing or CPU-spending request sent by a page of another "
                    "origin (Origin or Sec-Fetch-Site)")
    REQUEST_TIMEOUT = ("REQUEST_TIMEOUT", None, 408,
                       "the request body did not arrive in time (a slow or stalled client)")
    # -- model-backed skills (the model.chat tool) --------------------------------------
    MODEL_BAD_OUTPUT = ("MODEL_BAD_OUTPUT", _ANSWER, 502,
                        "the model's answer broke the skill's schema or rules after every "
                        "repair attempt")
    MODEL_UNREACHABLE = ("MODEL_UNREACHABLE", _ANSWER, 502,
                         "the model server refused, reset or cut the connection, or kept "
                         "answering 5xx through the retries")
    MODEL_TIMEOUT = ("MODEL_TIMEOUT", _ANSWER, 504,
                     "the model server sent no complete answer within the call's time")
    MODEL_RATE_LIMITED = ("MODEL_RATE_LIMITED", _ANSWER, 429,
                          "the model server kept answering 429, or its Retry-After is past "
                          "the session's deadline")
    MODEL_BAD_RESPONSE = ("MODEL_BAD_RESPONSE", _ANSWER, 502,
                          "the model server answered with something that is not a Chat "
                          "Completions JSON object (an HTML page, a cut or malformed body)")
    MODEL_RESPONSE_TOO_LARGE = ("MODEL_RESPONSE_TOO_LARGE", _ANSWER, 502,
                                "the model server's answer is over the size limit")
    MODEL_KEY_MISSING = ("MODEL_KEY_MISSING", _ANSWER, 500,
                         "--api-key-env names an environment variable that is not set")
    TOKEN_BUDGET_EXCEEDED = ("TOKEN_BUDGET_EXCEEDED", _ANSWER, 429,
                             "the session's model token budget (--max-tokens-total) is spent")
    # Versioned machines (docs/versioning.md).
    VERSION_MISMATCH = ("VERSION_MISMATCH", _STOP, 409,
                        "the session started on another version of the machine (migrate it, "
                        "keep that version registered, or --on-version continue)")
    MIGRATION_FAILED = ("MIGRATION_FAILED", _ANSWER, 500,
                        "a declared migration raised or returned an unusable state; nothing "
                        "was committed")

    # -- people in the loop (docs/review.md) ------------------------------------------------
    WAITING = ("WAITING", 3, 409,
               "the session waits for input or is paused: nothing was committed (not an "
               "error; claimfsm input or resume continues it)")
    NOT_WAITING = ("NOT_WAITING", _STOP, 409,
                   "input or resume for a session that does not wait for it")
    NOT_EDITABLE = ("NOT_EDITABLE", _STOP, 409,
                    "an edit of a field the machine does not declare editable, or of a "
                    "session that is neither waiting nor paused")

    # -- API keys and roles (docs/security.md) ----------------------------------------------
    AUTH_REQUIRED = ("AUTH_REQUIRED", _STOP, 401,
                     "the store has API keys and the request carries none, or a wrong, "
                     "revoked or expired one")
    FORBIDDEN = ("FORBIDDEN", _STOP, 403,
                 "the request's key has a role below the one the route needs")
    CSRF_FAILED = ("CSRF_FAILED", _STOP, 403,
                   "a form posted without the page's CSRF token, or with another session's")
    TOO_MANY_ATTEMPTS = ("TOO_MANY_ATTEMPTS", _STOP, 429,
                         "too many failed logins or bad keys from one address: wait "
                         "Retry-After seconds")
    KEY_EXISTS = ("KEY_EXISTS", _STOP, 409,
                  "an API key of that name exists or existed (names are never reused)")
    UNKNOWN_KEY = "UNKNOWN_KEY", _STOP, 404, "no live API key of that name"
    BAD_ROLE = "BAD_ROLE", _STOP, 422, "a role other than read, review, write or admin"
    BAD_DURATION = ("BAD_DURATION", _STOP, 422,
                    "a duration that is not a whole number of s, m, h, d or w (30d, 12h)")
    NO_KEYS = ("NO_KEYS", _STOP, 500,
               "--allow-remote on a store without API keys: add one (claimfsm keys add)")


_MEMBERS: dict[str, ErrorCode] = {str(m): m for m in ErrorCode}


def as_code(code: str) -> ErrorCode | str:
    """``code`` as its :class:`ErrorCode` member, or unchanged when it is not one (a custom
    skill's or tool's own code)."""
    return _MEMBERS.get(code, code)


def exit_status(code: str) -> int:
    """The CLI's exit status for ``code``: the table's, else 2 (a custom code)."""
    member = _MEMBERS.get(code)
    status = None if member is None else member.exit
    return _STOP if status is None else status


def http_status(code: str) -> int:
    """The HTTP API's status for ``code``: the table's, else 500 (a custom code)."""
    member = _MEMBERS.get(code)
    return 500 if member is None else member.http
