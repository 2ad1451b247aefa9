"""The I/O edge of smoke: an async httpx client that records raw arrival stamps and translates failures once.

Every network failure becomes an `EndpointError` with a kind (unreachable, unauthorized, http, timeout,
protocol) and a one-line message that keeps the underlying reason; streams never raise, they return a
`RawStream` whose `error` says what went wrong, so one bad request does not end the run.
The transport is injectable (httpx's own habit), so tests can route to any server.

Nothing an endpoint sends is read without a bound: plain answers up to `BODY_LIMITS` bytes, a stream up to
`stream_limits(max_tokens)` (far above what vLLM sends for that many tokens), so a hostile or broken endpoint
that floods cannot make smoke grow without end; what passes a bound is an error, not data.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any, Literal

import httpx

from k3deploy.smoke.record import RawStream

ErrorKind = Literal["unreachable", "unauthorized", "http", "timeout", "protocol"]

#: Most bytes read from each plain answer. vLLM's /health is empty, its model list a few hundred bytes per model
#: and its /metrics some hundreds of KB for a multi-engine server.
BODY_LIMITS = {"/health": 64 * 1024, "/v1/models": 4 * 1024 * 1024, "/metrics": 8 * 1024 * 1024}
#: Most bytes read from an error answer: its message goes into one line of the report.
ERROR_BODY_LIMIT = 64 * 1024
#: A vLLM stream chunk is one SSE event of two lines and well under 1 KB even with continuous usage; these bounds
#: allow ~4x that per token, plus room for the role, usage and [DONE] events.
STREAM_BYTES_PER_TOKEN = 4096
STREAM_LINES_PER_TOKEN = 4
STREAM_SLACK_BYTES = 1024 * 1024
STREAM_SLACK_LINES = 256


def stream_limits(max_tokens: int) -> tuple[int, int]:
    """(bytes, lines) a stream asked for `max_tokens` tokens may take before smoke stops reading it."""
    tokens = max(int(max_tokens), 1)
    return tokens * STREAM_BYTES_PER_TOKEN + STREAM_SLACK_BYTES, tokens * STREAM_LINES_PER_TOKEN + STREAM_SLACK_LINES


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


async def _read_capped(resp: httpx.Response, limit: int, url: str, *, fail: bool) -> bytes:
    """Up to `limit` bytes of a body; past it, an EndpointError when `fail`, else what was read, cut."""
    declared = resp.headers.get("content-length", "")
    too_big = EndpointError("protocol", f"{url} answered more than {limit // 1024} KiB; smoke reads at most that")
    if fail and declared.isdigit() and int(declared) > limit:
        raise too_big
    parts, size = [], 0
    async for data in resp.aiter_bytes():
        parts.append(data)
        size += len(data)
        if size > limit:
            if fail:
                raise too_big
            break
    return b"".join(parts)[:limit]


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

    async def _get(self, path: str) -> tuple[int, str]:
        """Status and text of a GET, its body read up to `BODY_LIMITS[path]` bytes (past it: a protocol error)."""
        url, limit = self._url(path), BODY_LIMITS[path]
        try:
            async with self._http.stream("GET", path) as resp:
                body = await _read_capped(resp, limit, url, fail=True)
                return resp.status_code, body.decode(resp.encoding or "utf-8", "replace")
        except httpx.HTTPError as exc:
            raise translate(exc, url) from None

    async def health(self) -> int:
        """Status code of GET /health (401/403 raise: the key is wrong, not the engine)."""
        status, text = await self._get("/health")
        if status in (401, 403):
            raise _status_error(status, self._url("/health"), text)
        return status

    async def models(self) -> list[str]:
        """Ids listed by GET /v1/models."""
        status, text = await self._get("/v1/models")
        if status != 200:
            raise _status_error(status, self._url("/v1/models"), text)
        try:
            return [str(item["id"]) for item in json.loads(text)["data"]]
        except (ValueError, KeyError, TypeError):
            raise EndpointError("protocol", f"{self._url('/v1/models')} did not answer an OpenAI model list: {text[:120]!r}") from None

    async def metrics(self) -> tuple[str, float, float]:
        """The Prometheus text of GET /metrics, and the stamps when the scrape began and ended."""
        started = self.clock()
        status, text = await self._get("/metrics")
        finished = self.clock()
        if status != 200:
            raise _status_error(status, self._url("/metrics"), text)
        return text, started, finished

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
        max_bytes, max_lines = stream_limits(int(payload.get("max_tokens") or 1))
        async with self._http.stream("POST", path, json=payload) as resp:
            if resp.status_code != 200:
                body = (await _read_capped(resp, ERROR_BODY_LIMIT, self._url(path), fail=False)).decode("utf-8", "replace")
                raise _status_error(resp.status_code, self._url(path), body)
            # Split lines by hand over the decoded bytes: every line of one read arrived at the same instant, and
            # this loop is the client's hot path (one pass per SSE chunk, hundreds per second at bs=1).
            lines, clock, pending, received = raw.lines, self.clock, b"", 0
            async for data in resp.aiter_bytes():
                stamp = clock()
                received += len(data)
                *complete, pending = (pending + data).split(b"\n")
                lines.extend((stamp, line.decode("utf-8", "replace").rstrip("\r")) for line in complete)
                if received > max_bytes or len(lines) > max_lines:
                    # Leaving the block closes the connection: the server's flood stops here.
                    raw.error = (f"the stream passed {min(received, max_bytes) // 1024} KiB / {min(len(lines), max_lines)} "
                                 f"lines for max_tokens={payload.get('max_tokens')}, far more than a vLLM server "
                                 "sends: stopped reading it")
                    del lines[max_lines:]
                    return
            if pending:
                lines.append((clock(), pending.decode("utf-8", "replace").rstrip("\r")))
