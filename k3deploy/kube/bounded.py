"""The official client with every request bounded: connect and read timeouts on each call, cut to the deadline.

`kubernetes.client.ApiClient.call_api` is the one door every request goes through: the generated typed APIs,
the DynamicClient's discovery and its `request` (kubernetes/dynamic/client.py), watches and version probes. A
call that asks for no `_request_timeout` gets none from the library, and urllib3 then waits forever on an API
that accepted the connection and never answers; `BoundedApiClient` fills the timeout in (and shortens one that
would outlive the command's deadline), reads a plain answer's body inside the same bound (rest.py requests
with `preload_content=False`, so a body that stalls half-way would otherwise block where nobody times it),
and turns a timeout into one `ApiTimeout` that names the server, the request and the seconds it waited.

urllib3's read timeout bounds each `recv`, so an API (or a proxy) that trickles a byte just inside it keeps one
request alive for ever: the body is read here in chunks, the request's whole time checked after each, and its
size capped (`MAX_BODY_BYTES`), so a request ends within its connect + read timeouts (those cut to the deadline).
"""

from __future__ import annotations

import re
import socket
import time
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client
from urllib3.exceptions import MaxRetryError, NewConnectionError, ProtocolError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from k3deploy.errors import ApiTimeout, EnvironmentProblem
from k3deploy.kube.deadline import Deadline, RequestBound
from k3deploy.kube.walled import until, walled

_WATCH = re.compile(r"[?&]watch=(true|1)(&|$)", re.IGNORECASE)


#: How much of an answer's body such an error shows.
SHOWN_BYTES = 60
#: The largest plain answer read (a list of every pod of a big cluster is tens of MiB); larger is not an API's.
MAX_BODY_BYTES = 256 << 20
_CHUNK = 1 << 16


def is_timeout(exc: BaseException) -> bool:
    """True for urllib3's and the socket layer's timeouts, bare or wrapped (MaxRetryError, ProtocolError)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, NewConnectionError):
            return False  # urllib3 2 derives it from ConnectTimeoutError, but it is a refusal, not a timeout
        if isinstance(cur, (Urllib3Timeout, socket.timeout, TimeoutError)):
            return True
        if isinstance(cur, MaxRetryError) and isinstance(cur.reason, BaseException):
            cur = cur.reason
            continue
        if isinstance(cur, ProtocolError) and cur.args and isinstance(cur.args[-1], BaseException):
            cur = cur.args[-1]
            continue
        cur = cur.__cause__
    return False


def _what(method: str, url: str) -> str:
    parts = urlsplit(url)
    return f"{method} {parts.path or '/'}"


class BoundedApiClient(client.ApiClient):
    """An `ApiClient` whose every request has (connect, read) timeouts no later than its `deadline` allows."""

    def __init__(self, configuration: Any, deadline: Deadline) -> None:
        super().__init__(configuration)
        self.deadline = deadline
        #: The last plain answer this connection read: (request, content type, its first bytes); what a "not the
        #: Kubernetes API" error of this connection says (kube/client.py translate).
        self.last_answer: tuple[str, str, bytes] | None = None
        walled(self.rest_client.pool_manager)  # a trickled status line or header ends with the request's bound

    @property
    def server(self) -> str:
        """The API server's URL, as the kubeconfig names it."""
        return str(self.configuration.host).rstrip("/")

    def describe_last_answer(self) -> str | None:
        """`GET /version answered text/html, starting '<!doctype html>...'`, or None before any answer was read."""
        if self.last_answer is None:
            return None
        what, content_type, head = self.last_answer
        text = head[:SHOWN_BYTES].decode("utf-8", "replace")
        more = "..." if len(head) > SHOWN_BYTES else ""
        return f"{what} answered {content_type or 'no Content-Type'}, starting {text!r}{more}"

    def _timed_out(self, what: str, bound: RequestBound, waited: float, trickled: int | None = None) -> ApiTimeout:
        if trickled is not None:
            kept = f"the command's deadline of {self.deadline.seconds:g}s" if bound.cut else f"{waited:.0f}s"
            return ApiTimeout(
                f"the Kubernetes API at {self.server} was still sending its answer after {kept} "
                f"({what}, {trickled} bytes so far)",
                hint="an API server or a proxy in front of it trickles its answers; check its health and the "
                "network path" + self.deadline.hint_tail(),
            )
        if bound.cut and self.deadline.seconds is not None:
            within = f"the command's deadline of {self.deadline.seconds:g}s"
        else:
            # urllib3 reports a stalled TLS handshake (bounded by the connect timeout) as a read timeout, so the
            # bound that fired is told by how long the request waited.
            within = f"{min((bound.connect, bound.read), key=lambda t: abs(t - waited)):g}s"
        return ApiTimeout(
            f"the Kubernetes API at {self.server} did not answer within {within} ({what})",
            hint="check that the API server is up and healthy (`kubectl get --raw /readyz`) and the network path "
            "to it" + self.deadline.hint_tail(),
        )

    def _read_body(self, response: Any, what: str, bound: RequestBound, started: float, until: float) -> bytes:
        """The answer's body, read in chunks, within the request's whole bound `until` and `MAX_BODY_BYTES`."""
        raw = response.response  # urllib3's HTTPResponse: rest.py asked for it unread (preload_content=False)
        chunks: list[bytes] = []
        size = 0
        # read1: what one recv brings (read(n) would wait for all n bytes of a trickle before the clock is checked)
        while chunk := raw.read1(_CHUNK):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raw.release_conn()
                raise EnvironmentProblem(
                    f"the Kubernetes API at {self.server} answered {what} with over {MAX_BODY_BYTES >> 20} MiB; "
                    "stopped reading",
                    hint="check that the kubeconfig points at the Kubernetes API, not another service",
                )
            if time.monotonic() > until:
                raw.release_conn()
                raise self._timed_out(what, bound, time.monotonic() - started, trickled=size)
        body = b"".join(chunks)
        # Callers that asked for the raw answer (the DynamicClient: _preload_content=False) read urllib3's `.data`,
        # which is its cached body once read whole; the body read here in chunks is put where `.data` finds it.
        raw._body = body
        return body

    def call_api(
        self,
        method: str,
        url: str,
        header_params: Any = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        """Send one request within its bound; a plain (non-watch) answer is read whole inside the same bound."""
        what = _what(method, url)
        bound = self.deadline.request_timeout(_request_timeout)
        if bound is None:
            raise ApiTimeout(
                f"the Kubernetes API at {self.server}: the command's deadline of {self.deadline.seconds:g}s "
                f"passed before {what} could be sent",
                hint=(f"raise {self.deadline.flag}, or check" if self.deadline.flag else "check")
                + " why the API server answers slowly",
            )
        started = time.monotonic()
        whole = bound.read if bound.cut else bound.connect + bound.read
        try:
            with until(whole):
                response = super().call_api(
                    method, url, header_params, body, post_params, _request_timeout=bound.as_tuple()
                )
            if not _WATCH.search(url):
                response.data = self._read_body(response, what, bound, started, started + whole)  # type: ignore[assignment]
                data = response.data or b""
                head = data[: SHOWN_BYTES + 1] if isinstance(data, bytes) else str(data)[: SHOWN_BYTES + 1].encode()
                self.last_answer = (what, str(response.getheader("Content-Type") or ""), head)
        except Exception as exc:
            if is_timeout(exc):
                raise self._timed_out(what, bound, time.monotonic() - started) from None
            raise
        return response
