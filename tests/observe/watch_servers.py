"""Test servers for `k3deploy watch` on 127.0.0.1: a scripted vLLM `/metrics` and a Prometheus HTTP API.

`PrometheusAPI` answers `/api/v1/query` as Prometheus does (prometheus/prometheus web/api/v1/api.go: `query`,
`respondError`; the envelope and result formats of prometheus.io/docs/prometheus/latest/querying/api/):
GET or POST (form) only; `query` must parse as PromQL (checked with the `promql-parser` package: a query that does
not parse, or a missing one, is 400 `bad_data` with `invalid parameter "query": ...`); `time` and `timeout`, when
given, must be a float or RFC 3339 time and a Prometheus duration (else 400 `bad_data`). An expression the test
did not answer is evaluated against an empty TSDB: a success with an empty vector, as Prometheus answers for
series that do not exist. `fail` / `fail_at` turn answers into an `execution` error (422), as an evaluation that
fails does.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import promql_parser

from tests.support.http_server import serving

#: Prometheus durations (model.ParseDuration, prometheus/common model/time.go).
_DURATION = re.compile(r"^(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$")
_STATUS = {"bad_data": 400, "execution": 422, "timeout": 503, "canceled": 503, "internal": 500, "not_found": 404}


@dataclass
class MetricsScript:
    """Bodies `/metrics` answers in turn (the last repeats); an int entry is an HTTP status with no metrics."""

    bodies: list[str | int]
    served: int = 0


@dataclass
class PromScript:
    """Answers by expression: a vector as [(labels, value)], or a float for a scalar result."""

    answers: dict[str, Any] = field(default_factory=dict)
    fail: int = 0  # the next `fail` queries answer an execution error
    fail_at: set[int] = field(default_factory=set)  # so do these queries (1-based, counting every valid query)
    queries: list[str] = field(default_factory=list)


def _valid_time(value: str) -> bool:
    try:
        float(value)
        return True
    except ValueError:
        pass
    try:
        datetime.fromisoformat(value)
        return True
    except ValueError:
        return False


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _api(self, status: int, doc: dict[str, Any]) -> None:
        self._send(status, json.dumps(doc).encode(), "application/json")

    def _error(self, kind: str, message: str) -> None:
        self._api(_STATUS[kind], {"status": "error", "errorType": kind, "error": message})

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/metrics" and self.server.metrics is not None:
            script = self.server.metrics
            body = script.bodies[min(script.served, len(script.bodies) - 1)]
            script.served += 1
            if isinstance(body, int):
                self._send(body, b"unavailable\n", "text/plain")
            else:
                self._send(200, body.encode(), "text/plain; version=0.0.4; charset=utf-8")
            return
        self._query(url.path, parse_qs(url.query, keep_blank_values=True))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        form = parse_qs(self.rfile.read(length).decode(), keep_blank_values=True)
        url = urlsplit(self.path)
        self._query(url.path, {**parse_qs(url.query, keep_blank_values=True), **form})

    def do_PUT(self) -> None:
        self._send(405, b"Method Not Allowed\n", "text/plain")

    def _query(self, path: str, params: dict[str, list[str]]) -> None:
        script = self.server.prom
        if path != "/api/v1/query" or script is None:
            self._send(404, b"404 page not found\n", "text/plain")
            return
        if "time" in params and not _valid_time(params["time"][0]):
            self._error(
                "bad_data", f'invalid parameter "time": cannot parse "{params["time"][0]}" to a valid timestamp'
            )
            return
        if "timeout" in params and not _DURATION.match(params["timeout"][0] or "x"):
            self._error(
                "bad_data", f'invalid parameter "timeout": cannot parse "{params["timeout"][0]}" to a valid duration'
            )
            return
        query = (params.get("query") or [""])[0]
        try:
            promql_parser.parse(query)
        except ValueError as exc:  # what the parser refuses, Prometheus refuses
            self._error("bad_data", f'invalid parameter "query": {exc}')
            return
        script.queries.append(query)
        if script.fail > 0 or len(script.queries) in script.fail_at:
            script.fail = max(0, script.fail - 1)
            self._error("execution", "query processing would load too many samples into memory in query execution")
            return
        answer = script.answers.get(query, [])
        now = 1764540000.0
        if isinstance(answer, float):
            data: dict[str, Any] = {"resultType": "scalar", "result": [now, _fmt(answer)]}
        else:
            data = {
                "resultType": "vector",
                "result": [{"metric": labels, "value": [now, _fmt(value)]} for labels, value in answer],
            }
        self._api(200, {"status": "success", "data": data})


def _fmt(value: float) -> str:
    # Prometheus writes sample values as strings, special values as NaN, +Inf, -Inf (api.go marshalPointJSON).
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    metrics: MetricsScript | None = None
    prom: PromScript | None = None


@contextlib.contextmanager
def serve(metrics: MetricsScript | None = None, prom: PromScript | None = None) -> Iterator[str]:
    """Run the server on a free 127.0.0.1 port; yields its base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.metrics, server.prom = metrics, prom
    with serving(server) as url:
        yield url
