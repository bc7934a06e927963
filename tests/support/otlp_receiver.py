"""A real OTLP/HTTP trace receiver for the tests: a process of its own on 127.0.0.1 that
takes ``POST /v1/traces`` (protobuf, as the SDK's exporter sends it), decodes it with
``opentelemetry-proto`` and appends one JSON line per span to a file.

``python -m tests.support.otlp_receiver OUT`` prints its port on the first line of
stdout, then serves until killed.
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = ["main"]


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def spans_of(body: bytes) -> list[dict[str, Any]]:
    """Every span of an export request, as plain data."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    out = []
    for resource in request.resource_spans:
        service = {a.key: _value(a.value) for a in resource.resource.attributes}
        for scope in resource.scope_spans:
            for span in scope.spans:
                out.append({
                    "name": span.name, "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(), "parent": span.parent_span_id.hex(),
                    "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()}
                              for link in span.links],
                    "attributes": {a.key: _value(a.value) for a in span.attributes},
                    "service": service.get("service.name"),
                })
    return out


def main(out: Path) -> None:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            spans = spans_of(body)
            with lock, out.open("a", encoding="utf-8") as f:
                f.writelines(json.dumps(span) + "\n" for span in spans)
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
