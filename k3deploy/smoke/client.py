"""The I/O edge of smoke: an async httpx client that records raw arrival stamps and translates failures once.

Every network failure becomes an `EndpointError` with a kind (unreachable, unauthorized, http, timeout,
protocol) and a one-line message that keeps the underlying reason; streams never raise, they return a
`RawStream` whose `error` says what went wrong, so one bad request does not end the run.
The transport is injectable (httpx's own habit), so tests can route to any server.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any, Literal

import httpx

from k3deploy.smoke.record import RawStream

ErrorKind = Literal["unreachable", "unauthorized", "http", "timeout", "protocol"]


class EndpointError(Exception):
    """A failure talking to the endpoint, already explained."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _causes(exc: BaseException) -> list[BaseException]:
    chain, seen = [], set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        chain.append(cur)
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return chain


def translate(exc: Exception, url: str) -> EndpointError:
    """The one place httpx's exceptions become EndpointErrors (kind + message naming the URL and the reason)."""
    if isinstance(exc, EndpointError):
        return exc
    chain = _causes(exc)
    reason = str(chain[-1]) or type(chain[-1]).__name__
    if isinstance(exc, httpx.ConnectTimeout):
        return EndpointError("unreachable", f"connecting to {url} timed out")
    if isinstance(exc, httpx.TimeoutException):
        return EndpointError("timeout", f"{url} did not answer in time ({type(exc).__name__})")
    if isinstance(exc, httpx.ConnectError):
        if any(isinstance(c, socket.gaierror) for c in chain) or "Name or service not known" in reason:
            return EndpointError("unreachable", f"DNS lookup failed for {httpx.URL(url).host}: {reason}")
        if any(isinstance(c, ssl.SSLError) for c in chain):
            return EndpointError("unreachable", f"TLS handshake with {url} failed: {reason}")
        if any(isinstance(c, ConnectionRefusedError) for c in chain):
            return EndpointError("unreachable", f"cannot connect to {url}: connection refused (nothing listens there)")
        return EndpointError("unreachable", f"cannot connect to {url}: {reason}")
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return EndpointError("protocol", f"connection to {url} broke: {reason}")
    if isinstance(exc, httpx.HTTPError):
        return EndpointError("protocol", f"{url}: {type(exc).__name__}: {reason}")
    raise exc


def _status_error(status: int, url: str, body: str) -> EndpointError:
    excerpt = " ".join(body.split())[:200]
    if status in (401, 403):
        return EndpointError("unauthorized", f"{url} answered {status}: {excerpt or 'unauthorized'}")
    return EndpointError("http", f"{url} answered {status}: {excerpt}")


class SmokeClient:
    """Talks to one OpenAI-compatible vLLM endpoint; stamps come from `clock` (seconds since the run began)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, request_timeout_s: float = 600.0,
                 max_connections: int = 32, transport: httpx.AsyncBaseTransport | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.request_timeout_s = request_timeout_s
        start = time.perf_counter()
        self.clock = clock or (lambda: time.perf_counter() - start)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(request_timeout_s, connect=min(10.0, request_timeout_s)),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            transport=transport,
        )

    async def __aenter__(self) -> SmokeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    def _url(self, path: str) -> str:
        return self.base_url + path

    async def _get(self, path: str) -> httpx.Response:
        try:
            return await self._http.get(path)
        except httpx.HTTPError as exc:
            raise translate(exc, self._url(path)) from None

    async def health(self) -> int:
        """Status code of GET /health (401/403 raise: the key is wrong, not the engine)."""
        resp = await self._get("/health")
        if resp.status_code in (401, 403):
            raise _status_error(resp.status_code, self._url("/health"), resp.text)
        return resp.status_code

    async def models(self) -> list[str]:
        """Ids listed by GET /v1/models."""
        resp = await self._get("/v1/models")
        if resp.status_code != 200:
            raise _status_error(resp.status_code, self._url("/v1/models"), resp.text)
        try:
            return [str(item["id"]) for item in resp.json()["data"]]
        except (ValueError, KeyError, TypeError):
            raise EndpointError("protocol", f"{self._url('/v1/models')} did not answer an OpenAI model list: {resp.text[:120]!r}") from None

    async def metrics(self) -> tuple[str, float, float]:
        """The Prometheus text of GET /metrics, and the stamps when the scrape began and ended."""
        started = self.clock()
        resp = await self._get("/metrics")
        finished = self.clock()
        if resp.status_code != 200:
            raise _status_error(resp.status_code, self._url("/metrics"), resp.text)
        return resp.text, started, finished

    async def stream(self, path: str, payload: dict[str, Any]) -> RawStream:
        """POST a streaming request and record each line with its arrival stamp; never raises for endpoint failures."""
        raw = RawStream(t_send=self.clock())
        try:
            await asyncio.wait_for(self._stream_into(raw, path, payload), timeout=self.request_timeout_s)
        except asyncio.TimeoutError:
            raw.error = f"request timed out after {self.request_timeout_s:g} s (smoke.request_timeout_s)"
        except EndpointError as exc:
            raw.error = exc.message
        except httpx.HTTPError as exc:
            raw.error = translate(exc, self._url(path)).message
        raw.t_end = self.clock()
        return raw

    async def _stream_into(self, raw: RawStream, path: str, payload: dict[str, Any]) -> None:
        async with self._http.stream("POST", path, json=payload) as resp:
            if resp.status_code != 200:
                body = (await resp.aread()).decode("utf-8", "replace")
                raise _status_error(resp.status_code, self._url(path), body)
            # Split lines by hand over the decoded bytes: every line of one read arrived at the same instant, and
            # this loop is the client's hot path (one pass per SSE chunk, hundreds per second at bs=1).
            lines, clock, pending = raw.lines, self.clock, b""
            async for data in resp.aiter_bytes():
                stamp = clock()
                *complete, pending = (pending + data).split(b"\n")
                lines.extend((stamp, line.decode("utf-8", "replace").rstrip("\r")) for line in complete)
            if pending:
                lines.append((clock(), pending.decode("utf-8", "replace").rstrip("\r")))
