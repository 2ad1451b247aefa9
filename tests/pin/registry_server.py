"""A registry that misbehaves, on 127.0.0.1: only for the faults the real registry (tests/pin/distribution.py) won't produce.

Every other pin test runs against the CNCF distribution registry itself. distribution always serves a manifest's
exact bytes with their true digest, refuses to store a manifest over 4 MiB (registry/handlers/manifests.go,
maxManifestBodySize) and answers promptly, so what a rewriting proxy, a broken mirror or a hung connection does
to a client has to be staged here:
- `lying-digest`: an OCI index whose `Docker-Content-Digest` is not the sha256 of the bytes sent (a proxy that
  re-serialised the JSON; the header's name and meaning are distribution's, registry/handlers/manifests.go);
- `huge-manifest`: a 200 that streams far more than 4 MiB, without a Content-Length, until the client hangs up;
- `stall`: the status line and headers of a manifest, then no byte until the server is stopped;
- `answers`: the JSON bodies it is given, by path (a manifest with a field of the wrong type, a config digest
  `../../../../token?x=`), and distribution's 404 `{"errors": [...]}` for any other path; it records every
  path asked (`paths`), so a test sees where a client went.
Except for `answers`, any path answers; it imitates only the shape of `GET /v2/<name>/manifests/<reference>`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

from k3deploy.pin.oci import OCI_INDEX
from tests.pin.serving import Serving

Fault = Literal["lying-digest", "huge-manifest", "stall", "answers"]
#: How much the huge manifest offers: far past the 4 MiB a client may read and any socket buffering.
HUGE_BYTES = 256 * 1024 * 1024
INDEX = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": "sha256:" + "0" * 64,
                "size": 2,
                "platform": {"os": "linux", "architecture": "arm64"},
            }
        ],
    }
).encode()


class FaultyRegistry(Serving):
    """Serves one fault; `sent` counts the body bytes it got out before the client went away."""

    def __init__(self, fault: Fault, answers: dict[str, tuple[str, object]] | None = None) -> None:
        super().__init__()
        self.fault = fault
        #: `answers`: path -> (Content-Type, JSON value) served with 200.
        self.answers = dict(answers or {})
        self.paths: list[str] = []
        self.sent = 0
        self.released = threading.Event()

    def start(self) -> FaultyRegistry:
        """Serve on an ephemeral 127.0.0.1 port in a daemon thread."""
        self.serve(_Handler)
        return self

    def stop(self) -> None:
        """Release a stalled answer, then stop serving."""
        self.released.set()
        super().stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        """The fault, whatever the path."""
        reg: FaultyRegistry = self.server.owner  # type: ignore[attr-defined]
        if reg.fault == "answers":
            self._answer(reg)
            return
        self.send_response(200)
        self.send_header("Content-Type", OCI_INDEX)
        if reg.fault == "lying-digest":
            self.send_header("Docker-Content-Digest", "sha256:" + hashlib.sha256(INDEX + b" ").hexdigest())
            self.send_header("Content-Length", str(len(INDEX)))
            self.end_headers()
            self.wfile.write(INDEX)
        elif reg.fault == "huge-manifest":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b" " * 65536
            try:
                while reg.sent < HUGE_BYTES and not reg.released.is_set():
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    reg.sent += len(chunk)
            except OSError:  # the client stopped reading and closed: what it should do
                self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(INDEX)))
            self.end_headers()
            self.wfile.flush()
            reg.released.wait(timeout=120)

    def _answer(self, reg: FaultyRegistry) -> None:
        reg.paths.append(self.path)
        found = reg.answers.get(self.path)
        if found is None:
            body = json.dumps({"errors": [{"code": "BLOB_UNKNOWN", "message": "blob unknown to registry"}]}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
        else:
            body = json.dumps(found[1]).encode()
            self.send_response(200)
            self.send_header("Content-Type", found[0])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
