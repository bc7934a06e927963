"""A real OpenAI-compatible server for the tests: llama.cpp's, through llama-cpp-python.

It serves the tiny random-weight model of :mod:`tests.support.tiny_gguf` (written to a
temporary folder, nothing downloaded) on a free port of 127.0.0.1; :func:`start` waits
until ``/v1/models`` answers and the caller stops it (a pytest finaliser). The server comes
from the ``model-server`` extra, which `.ci/run` installs (its sdist compiles llama.cpp,
about 20 minutes on two shared cores, so ``make install`` leaves it out): without it the
tests that need it skip, saying so, and fail under ``CLAIMFSM_REQUIRE_ALL=1``.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import orjson

from tests.support.components import missing

__all__ = ["LlamaServer", "need_llama_server", "start"]

MODEL_ALIAS = "tiny"
_READY_S = 60.0


@dataclass
class LlamaServer:
    """A running server: its base URL, the model name to ask for, the process."""

    url: str
    model: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        """Terminate the process (kill it if it lingers)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def need_llama_server() -> None:
    """Skip (or fail under CLAIMFSM_REQUIRE_ALL=1) when the extra is not installed."""
    for module in ("llama_cpp", "gguf", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            missing("llama.cpp server", f"{module} is not installed (pip install -e "
                    "'.[model-server]'; .ci/run installs it)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _warm(server: LlamaServer) -> None:
    # The first completion pays for loading the model: paid here, not in a test's deadline.
    body = orjson.dumps({"model": server.model, "max_tokens": 4,
                         "messages": [{"role": "user", "content": "warm up " * 500}]})
    req = urllib.request.Request(server.url + "/chat/completions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        resp.read()


def start(folder: Path) -> LlamaServer:
    """Write the tiny model into ``folder`` and start the server on it."""
    need_llama_server()
    from tests.support.tiny_gguf import CONTEXT, write_tiny_model

    model = write_tiny_model(folder / "tiny.gguf")
    port = _free_port()
    log = folder / "llama-server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
             "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", str(CONTEXT), "--n_threads", "1"],
            stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", MODEL_ALIAS, process, log)
    ends = time.monotonic() + _READY_S
    while time.monotonic() < ends:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(server.url + "/models", timeout=2) as resp:
                if resp.status == 200:
                    _warm(server)
                    return server
        except OSError:
            time.sleep(0.2)
    server.stop()
    tail = log.read_text(errors="replace")[-2000:]
    missing("llama.cpp server", f"it did not start within {_READY_S:.0f} s:\n{tail}")
