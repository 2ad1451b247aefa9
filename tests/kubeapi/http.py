"""The HTTP side of the test API server: routing Kubernetes REST paths, faults, JSON answers and watch streams."""

from __future__ import annotations

import contextlib
import json
import math
import socket
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

from tests.kubeapi import discovery, resources, watch
from tests.kubeapi.errors import ApiError
from tests.kubeapi.faults import Fault
from tests.kubeapi.resources import Call
from tests.kubeapi.selectors import field_selector, label_selector

if TYPE_CHECKING:
    from tests.kubeapi.server import KubeApiServer


def _warning_headers(call: Call) -> dict[str, str]:
    """`Warning: 299 - "..."` (RFC 7234, as k8s.io/apiserver/pkg/warning writes them); several are joined with
    commas, which http.client and urllib3 hand to clients as one header value.
    """
    if not call.warnings:
        return {}
    return {"Warning": ", ".join("299 - " + json.dumps(w) for w in call.warnings)}


class _DroppedError(Exception):
    """The connection was closed on purpose (fault injection)."""


class Handler(BaseHTTPRequestHandler):
    """One connection; `self.server.api` is the KubeApiServer whose store, faults and access it serves."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without TCP_NODELAY each answer waits ~40 ms for a delayed ACK.
    disable_nagle_algorithm = True
    server: ApiHTTPServer

    def log_message(self, format: str, *args: object) -> None:  # BaseHTTPRequestHandler's name
        """Quiet: tests read `faults.requests` instead."""

    def do_GET(self) -> None:  # BaseHTTPRequestHandler's naming
        """GET."""
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

    # ----- transport --------------------------------------------------------------------------------------
    def _send(self, code: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, code: int, body: object, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(body).encode(), "application/json", headers)

    def _send_error(self, error: ApiError) -> None:
        headers = {}
        status = error.status()
        if error.retry_after is not None:
            seconds = math.ceil(error.retry_after)  # the header carries whole seconds
            headers["Retry-After"] = str(seconds)
            status.setdefault("details", {})["retryAfterSeconds"] = seconds
        self._send_json(error.code, status, headers)

    def _drop(self) -> None:
        """Close the socket without finishing the answer."""
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True
        raise _DroppedError

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # ----- dispatch ---------------------------------------------------------------------------------------
    def _serve(self, method: str) -> None:
        api = self.server.api
        parts = urlsplit(self.path)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fault = api.faults.take(method, target)
        try:
            if fault is not None:
                self._inject(fault, query=dict(parse_qsl(parts.query)))
            self._route(method, parts.path, dict(parse_qsl(parts.query)), body, fault)
        except _DroppedError:
            return
        except ApiError as error:
            self._send_error(error)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a bug in the test server: answer 500 with the traceback, as text for humans
            self._send_error(ApiError(500, f"test API server bug: {exc!r}\n{traceback.format_exc()}"))

    def _inject(self, fault: Fault, query: dict[str, str]) -> None:
        if fault.delay:
            time.sleep(fault.delay)
        is_watch = query.get("watch") in ("true", "1")
        if fault.drop and not (is_watch and fault.drop_after > 0):
            self._drop()
        if fault.status is not None:
            raise ApiError(
                fault.status,
                fault.message or _FAULT_MESSAGES.get(fault.status, "injected fault"),
                retry_after=fault.retry_after,
            )

    def _route(self, method: str, path: str, query: dict[str, str], body: bytes, fault: Fault | None) -> None:
        api = self.server.api
        registry = api.registry
        segments = [s for s in path.split("/") if s]
        path = "/" + "/".join(segments)
        if path in ("/healthz", "/readyz", "/livez"):
            return self._send(200, b"ok", "text/plain")
        if path == "/version":
            return self._send_json(200, discovery.version_info(api.git_version))
        if path == "/api":
            return self._send_json(200, discovery.api_versions(api.address))
        if path == "/apis":
            return self._send_json(200, discovery.api_group_list(registry))
        if segments[:2] == ["openapi", "v3"]:
            if len(segments) == 2:
                return self._send_json(200, discovery.openapi_v3_root(registry))
            gv = segments[2:]
            group, version = ("", gv[1]) if gv[0] == "api" else (gv[1], gv[2] if len(gv) > 2 else "")
            doc = discovery.openapi_v3_group(registry, group, version, api.git_version)
            if doc is None:
                raise ApiError(404, "the server could not find the requested resource")
            return self._send_json(200, doc)
        if segments[:1] == ["api"] and len(segments) >= 2:
            group, version, rest = "", segments[1], segments[2:]
        elif segments[:1] == ["apis"] and len(segments) >= 2:
            if len(segments) == 2:
                doc = discovery.api_group(registry, segments[1])
                if doc is None:
                    raise ApiError(404, "the server could not find the requested resource")
                return self._send_json(200, doc)
            group, version, rest = segments[1], segments[2], segments[3:]
        else:
            raise ApiError(404, "the server could not find the requested resource")
        if not rest:
            doc = discovery.resource_list(registry, group, version)
            if doc is None:
                raise ApiError(404, "the server could not find the requested resource")
            return self._send_json(200, doc)
        if rest[0] == "watch":
            rest = rest[1:]
            query["watch"] = "true"
        call = self._call(method, group, version, rest, query, body)
        self._resource(call, fault)

    def _call(self, method: str, group: str, version: str, rest: list[str], query: dict[str, str], body: bytes) -> Call:
        registry = self.server.api.registry
        namespace = None
        if (
            rest[0] == "namespaces"
            and len(rest) >= 3
            and registry.lookup(group, version, rest[2]) is not None
            and registry.lookup(group, version, rest[2]).namespaced
        ):
            namespace, rest = rest[1], rest[2:]
        rtype = registry.lookup(group, version, rest[0])
        if rtype is None or len(rest) > 3:
            raise ApiError(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in rtype.subresources:
            raise ApiError(404, "the server could not find the requested resource")
        headers = {k.lower(): v for k, v in self.headers.items()}
        return Call(method, rtype, version, namespace, name, sub, query, headers, body)

    def _resource(self, call: Call, fault: Fault | None) -> None:
        api = self.server.api
        store, rtype = api.store, call.rtype
        verb = call.verb
        if not api.access.allowed(verb, rtype.group, rtype.plural, call.namespace or "", call.subresource or ""):
            raise ApiError(
                403,
                api.access.forbidden_message(
                    verb, rtype.group, rtype.plural, call.namespace or "", call.subresource or ""
                ),
                details={"name": call.name or "", "group": rtype.group, "kind": rtype.plural},
            )
        if rtype.key == ("authorization.k8s.io", "selfsubjectaccessreviews") and call.method == "POST":
            return self._send_json(201, api.access.review(call.json_body() or {}))
        if call.subresource == "log":
            return self._send(200, resources.pod_log(store, call).encode(), "text/plain")
        if call.subresource == "binding" and call.method == "POST":
            return self._send_json(*resources.bind(store, call))
        if call.subresource not in (None, "status"):
            raise ApiError(405, f"the server does not allow this method on {call.subresource}")
        if call.method == "GET" and call.name is None:
            if call.query.get("watch") in ("true", "1"):
                return self._watch(call, fault)
            return self._send_json(200, resources.list_objects(store, call))
        if call.method == "GET":
            return self._send_json(200, resources.get_object(store, call))
        if call.method == "POST" and call.name is None:
            return self._send_json(*resources.create(store, call), _warning_headers(call))
        if call.method == "PUT" and call.name:
            return self._send_json(200, resources.replace(store, call), _warning_headers(call))
        if call.method == "PATCH" and call.name:
            return self._send_json(*resources.patch(store, call), _warning_headers(call))
        if call.method == "DELETE" and call.name:
            return self._send_json(200, resources.delete(store, call))
        if call.method == "DELETE":
            return self._send_json(200, resources.delete_collection(store, call))
        raise ApiError(405, "the server does not allow this method on the requested resource")

    def _watch(self, call: Call, fault: Fault | None) -> None:
        api = self.server.api
        by_label = label_selector(call.query.get("labelSelector"))
        by_field = field_selector(call.query.get("fieldSelector"))
        timeout = float(call.query.get("timeoutSeconds") or api.default_watch_timeout)
        bookmarks = api.bookmark_interval if call.query.get("allowWatchBookmarks") == "true" else None
        stream = watch.events(
            api.store,
            call.rtype,
            call.api_version,
            call.namespace,
            lambda o: by_label(o) and by_field(o),
            call.query.get("resourceVersion"),
            timeout,
            bookmarks,
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        for sent, event in enumerate(stream):
            if event["type"] == watch.DROP or (fault is not None and fault.drop and sent >= fault.drop_after):
                self._drop()
            self._chunk(json.dumps(event).encode() + b"\n")
            if event["type"] != "BOOKMARK":
                api.watch_events_sent += 1
        if fault is not None and fault.drop:
            self._drop()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


_FAULT_MESSAGES = {
    403: "forbidden: injected by the test",
    409: "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest "
    "version and try again",
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected by the test",
    503: "The server is currently unable to handle the request",
}


class ApiHTTPServer(ThreadingHTTPServer):
    """A threaded HTTP server on 127.0.0.1 that knows its KubeApiServer."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, api: KubeApiServer) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.api = api
