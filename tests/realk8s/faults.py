"""A fault proxy in front of the plane's real kube-apiserver, on the CLI's kubeconfig only: faults a real server does
not produce on demand (429/500 with Retry-After, hangs, dropped connections and watches, a 410 inside a watch, a
rewritten /version), by the rules of tests/realk8s/fault_rules.py.
Everything else is passed through unchanged: the controllers and the tests' own client talk to the server directly.

HTTPS on 127.0.0.1 with a certificate of the plane's CA; the upstream is verified with the same CA. Requests are
forwarded with HTTP/1.1 and without Accept-Encoding (answers come back unencoded, so a rule can rewrite them);
a watch is relayed event by event (JSON lines) so that a rule can cut it or end it with an ERROR event.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from k3deploy.render.serving_pods import merge_patch
from tests.realk8s.certs import CertPair
from tests.realk8s.fault_rules import Fault, Faults

#: Headers that belong to one connection, or that this proxy sets itself.
_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
    "content-encoding",
    "accept-encoding",
    "host",
}
_MESSAGES = {
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server has prevented the request from succeeding",
    503: "the server is currently unable to handle the request",
}
#: Longest a relayed answer may take (a watch ends by its timeoutSeconds well before).
UPSTREAM_READ_S = 600.0


def status_body(code: int, message: str, retry_after: int | None = None) -> dict[str, Any]:
    """A metav1.Status as kube-apiserver writes it for an error."""
    reasons = {
        410: "Expired",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
        403: "Forbidden",
    }
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reasons.get(code, "Unknown"),
        "code": code,
    }
    if retry_after is not None:
        body["details"] = {"retryAfterSeconds": retry_after}
    return body


class _Done(Exception):
    """The request is finished without forwarding it: answered by a rule, or its connection cut on purpose."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `faults.requests`."""

    def do_GET(self) -> None:
        """GET (watches included)."""
        self._serve("GET")

    def do_POST(self) -> None:
        """POST."""
        self._serve("POST")

    def do_PUT(self) -> None:
        """PUT."""
        self._serve("PUT")

    def do_PATCH(self) -> None:
        """PATCH."""
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        """DELETE."""
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        self._started = False
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fault = self.server.faults.take(method, self.path)
        query = dict(parse_qsl(urlsplit(self.path).query))
        watch = query.get("watch") in ("true", "1") or "/watch/" in urlsplit(self.path).path
        try:
            if fault is not None:
                self._inject(fault, watch)
            self._forward(method, body, fault, watch)
            self.server.faults.answered.append(f"{method} {self.path}")
        except _Done:
            return
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        except (httpx.HTTPError, RuntimeError) as exc:
            # The upstream refused or cut the answer, or the proxy is stopping (its client closed).
            self.close_connection = True
            if not self._started:
                self._send_json(503, status_body(503, f"fault proxy: upstream unreachable: {exc}"))

    def _inject(self, fault: Fault, watch: bool) -> None:
        if fault.delay:
            time.sleep(fault.delay)
        if fault.drop and not (watch and fault.drop_after > 0):
            self._drop()
        if fault.status is not None:
            # The header carries whole seconds.
            retry = None if fault.retry_after is None else math.ceil(fault.retry_after)
            headers = {"Retry-After": str(retry)} if retry is not None else {}
            message = fault.message or _MESSAGES.get(fault.status, "injected fault")
            self._send_json(fault.status, status_body(fault.status, message, retry), headers)
            raise _Done

    def _drop(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True
        raise _Done

    def send_response(self, code: int, message: str | None = None) -> None:
        """Start an answer (remembered: once started, an error can only cut the connection)."""
        self._started = True
        super().send_response(code, message)

    def _send(self, code: int, payload: bytes, headers: dict[str, str]) -> None:
        self.send_response(code)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, code: int, body: object, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})})

    def _forward(self, method: str, body: bytes, fault: Fault | None, watch: bool) -> None:
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _HOP]
        request = self.server.upstream.build_request(method, self.path, headers=headers, content=body)
        response = self.server.upstream.send(request, stream=True)
        try:
            passed = {k: v for k, v in response.headers.items() if k.lower() not in _HOP}
            if watch and response.status_code == 200:
                return self._relay_watch(response, passed, fault)
            payload = response.read()
            if fault is not None and fault.body_patch and response.status_code < 300:
                payload = json.dumps(merge_patch(json.loads(payload), fault.body_patch)).encode()
            self._send(response.status_code, payload, passed)
        finally:
            response.close()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _relay_watch(self, response: httpx.Response, headers: dict[str, str], fault: Fault | None) -> None:
        self.send_response(200)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        cut = fault is not None and (fault.drop or fault.expire)
        sent = 0
        if not cut or (fault is not None and fault.drop_after > 0):
            for line in response.iter_lines():
                if not line:
                    continue
                self._chunk(line.encode() + b"\n")
                sent += 1
                if cut and fault is not None and sent >= fault.drop_after:
                    break
        if fault is not None and fault.drop:
            self._drop()
        if fault is not None and fault.expire:
            message = fault.message or "too old resource version: 1 (2)"
            event = {"type": "ERROR", "object": status_body(410, message)}
            self._chunk(json.dumps(event).encode() + b"\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, tls: ssl.SSLContext, upstream: httpx.Client, faults: Faults) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tls = tls
        self.upstream = upstream
        self.faults = faults
        self.errors: list[str] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that ended badly (a client gone mid-handshake, the proxy stopping): kept, not printed."""
        self.errors.append(f"{client_address}: {sys.exc_info()[1]!r}")

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        # The handshake runs in the connection's thread (on first read), never in the accepting one.
        return self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address


class FaultProxy:
    """`url` serves the upstream through `faults`; `kubeconfig(path, token)` points a client at it."""

    def __init__(self, upstream_url: str, ca_file: Path, serving: CertPair, faults: Faults | None = None) -> None:
        self.faults = faults or Faults()
        self.ca_file = ca_file
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(str(serving.cert), str(serving.key))
        self._upstream = httpx.Client(
            base_url=upstream_url,
            verify=ssl.create_default_context(cafile=str(ca_file)),
            timeout=httpx.Timeout(UPSTREAM_READ_S, connect=5.0),
        )
        self._server = _Server(tls, self._upstream, self.faults)
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault proxy", daemon=True)

    def start(self) -> FaultProxy:
        """Serve from a thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the upstream connections (a request held by a delay rule ends with its thread)."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        self._upstream.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
