"""The I/O edge of smoke and bench: an async client that records raw arrival stamps and translates failures once.

Every network failure becomes an `EndpointError` with a kind (unreachable, unauthorized, http, timeout,
protocol) and a one-line message that keeps the underlying reason; streams never raise, they return a
`RawStream` whose `error` says what went wrong, so one bad request does not end the run.

Plain answers (/health, /v1/models, /metrics) go through httpx (its transport is injectable). Streams go
through aiohttp, as `vllm bench serve` does (vllm/benchmarks/lib/endpoint_request_func.py): its C HTTP parser
costs a fraction per chunk of httpx's pure-Python one, and a streaming client's own CPU per token is what
bounds how fast a stream it can time honestly. The hot loop only stamps and keeps each read
(`time.perf_counter`, the bytes as they came); decoding waits for the stream's end (`record.build_record`).

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
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import httpx

from k3deploy.errors import EndpointError
from k3deploy.redact import redact_url
from k3deploy.smoke.record import RawStream

#: Most bytes read from each plain answer. vLLM's /health is empty, its model list a few hundred bytes per model
#: and its /metrics some hundreds of KB for a multi-engine server.
#: Seconds an idle connection is kept for reuse: well under vLLM's server-side 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE).
KEEPALIVE_S = 2.0
BODY_LIMITS = {"/health": 64 * 1024, "/version": 64 * 1024, "/v1/models": 4 * 1024 * 1024, "/metrics": 8 * 1024 * 1024}
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


def translate_stream(exc: aiohttp.ClientError, url: str) -> EndpointError:
    """An aiohttp failure of a stream as an EndpointError, worded as `translate` words httpx's."""
    chain = _causes(exc)
    reason = str(chain[-1]) or type(chain[-1]).__name__
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return EndpointError("unreachable", f"DNS lookup failed for {httpx.URL(url).host}: {reason}")
    if isinstance(exc, (aiohttp.ClientSSLError, aiohttp.ServerFingerprintMismatch)) or any(
        isinstance(c, ssl.SSLError) for c in chain
    ):
        return EndpointError("unreachable", f"TLS handshake with {url} failed: {reason}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return EndpointError("unreachable", f"cannot connect to {url}: connection refused (nothing listens there)")
        return EndpointError("unreachable", f"cannot connect to {url}: {reason}")
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return EndpointError("timeout", f"{url} did not answer in time ({type(exc).__name__})")
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
        return EndpointError("protocol", f"connection to {url} broke: {reason}")
    return EndpointError("protocol", f"{url}: {type(exc).__name__}: {reason}")


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


async def _read_error_body(resp: aiohttp.ClientResponse) -> str:
    """Up to ERROR_BODY_LIMIT bytes of an error answer, as text."""
    parts, size = [], 0
    while size < ERROR_BODY_LIMIT:
        data = await resp.content.read(ERROR_BODY_LIMIT - size)
        if not data:
            break
        parts.append(data)
        size += len(data)
    return b"".join(parts).decode("utf-8", "replace")


_T = TypeVar("_T")


def run_fast(coro: Awaitable[_T]) -> _T:
    """Run a coroutine on uvloop where it is installed (a fraction of asyncio's CPU per socket read), else asyncio."""
    try:
        import uvloop  # optional: uvloop has no Windows build
    except ImportError:  # uvloop has no Windows build
        return asyncio.run(coro)  # type: ignore[arg-type]
    return uvloop.run(coro)  # type: ignore[arg-type]


class SmokeClient:
    """Talks to one OpenAI-compatible vLLM endpoint; stamps come from `clock` (seconds since the run began).

    `clock` must be `time.perf_counter` minus a constant: the stream's hot loop stamps with `time.perf_counter`
    itself and shifts once per request. `transport` (httpx) carries the plain GETs.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        request_timeout_s: float = 600.0,
        max_connections: int = 32,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        #: The base URL as messages show it: credentials in its userinfo redacted.
        self.shown_url = redact_url(self.base_url)
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        start = time.perf_counter()
        self.clock = clock or (lambda: time.perf_counter() - start)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._headers = headers
        self._session: aiohttp.ClientSession | None = None
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(request_timeout_s, connect=min(10.0, request_timeout_s)),
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections, keepalive_expiry=KEEPALIVE_S
            ),
            transport=transport,
        )

    async def __aenter__(self) -> SmokeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()
        if self._session is not None:
            await self._session.close()

    def _streams(self) -> aiohttp.ClientSession:
        """The aiohttp session of the streams, made on first use (it must be made inside the running loop)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                # Asked uncompressed, read uncompressed: a bound on bytes read is then a bound on bytes kept.
                headers={**self._headers, "Accept-Encoding": "identity"},
                # vLLM's server drops a connection idle for 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE); aiohttp would keep it
                # 15 s and a request sent on it as the server closes it fails ("Server disconnected"): drop it first.
                connector=aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=KEEPALIVE_S),
                # The request's whole time is bounded by `stream`'s wait_for; a per-read timer would be re-armed for
                # every chunk that arrives, a cost per token for nothing.
                timeout=aiohttp.ClientTimeout(total=None, connect=min(10.0, self.request_timeout_s)),
                auto_decompress=False,
            )
        return self._session

    def _url(self, path: str) -> str:
        return self.base_url + path

    def _shown(self, path: str) -> str:
        return self.shown_url + path

    async def _get(self, path: str) -> tuple[int, str]:
        """Status and text of a GET, its body read up to `BODY_LIMITS[path]` bytes (past it: a protocol error).

        The whole exchange, status line and headers included, ends within its connect and read timeouts added up
        (`_whole_s`): httpx's timeouts bound each read, and a server trickling its head a byte at a time would
        otherwise hold the GET for ever. A server that sends nothing still ends at httpx's read timeout first.
        """
        whole = self._whole_s()
        try:
            return await asyncio.wait_for(self._get_within(path), timeout=whole)
        except TimeoutError:
            raise EndpointError(
                "timeout",
                f"{self._shown(path)} did not answer in time (its whole answer took over {whole:g} s: "
                "smoke.request_timeout_s plus the connect timeout)",
            ) from None

    def _whole_s(self) -> float:
        """The most one plain GET may take as a whole: its connect timeout plus its read timeout."""
        return self.request_timeout_s + min(10.0, self.request_timeout_s)

    async def _get_within(self, path: str) -> tuple[int, str]:
        url, limit = self._shown(path), BODY_LIMITS[path]
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
            raise _status_error(status, self._shown("/health"), text)
        return status

    async def models(self) -> list[str]:
        """Ids listed by GET /v1/models."""
        status, text = await self._get("/v1/models")
        if status != 200:
            raise _status_error(status, self._shown("/v1/models"), text)
        try:
            return [str(item["id"]) for item in json.loads(text)["data"]]
        except (ValueError, KeyError, TypeError):
            raise EndpointError(
                "protocol", f"{self._shown('/v1/models')} did not answer an OpenAI model list: {text[:120]!r}"
            ) from None

    async def server_version(self) -> str | None:
        """`version` of GET /version (vLLM's), or None where the server has no such endpoint or it fails."""
        try:
            status, text = await self._get("/version")
            value = json.loads(text).get("version") if status == 200 else None
        except (EndpointError, ValueError, AttributeError):
            return None
        return str(value) if value is not None else None

    async def metrics(self) -> tuple[str, float, float]:
        """The Prometheus text of GET /metrics, and the stamps when the scrape began and ended."""
        started = self.clock()
        status, text = await self._get("/metrics")
        finished = self.clock()
        if status != 200:
            raise _status_error(status, self._shown("/metrics"), text)
        return text, started, finished

    async def stream(self, path: str, payload: dict[str, Any]) -> RawStream:
        """POST a streaming request and record each read with its arrival stamp; never raises for endpoint failures."""
        raw = RawStream(t_send=self.clock())
        raw.reads_shift = raw.t_send - time.perf_counter()
        try:
            await asyncio.wait_for(self._stream_into(raw, path, payload), timeout=self.request_timeout_s)
        except TimeoutError:
            raw.error = f"request timed out after {self.request_timeout_s:g} s (smoke.request_timeout_s)"
        except EndpointError as exc:
            raw.error = exc.message
        except aiohttp.ClientError as exc:
            raw.error = translate_stream(exc, self._shown(path)).message
        raw.t_end = self.clock()
        return raw

    async def _stream_into(self, raw: RawStream, path: str, payload: dict[str, Any]) -> None:
        max_bytes, max_lines = stream_limits(int(payload.get("max_tokens") or 1))
        async with self._streams().post(self._url(path), json=payload) as resp:
            if resp.status != 200:
                raise _status_error(resp.status, self._shown(path), await _read_error_body(resp))
            # The client's hot path, one pass per socket read (hundreds per second per stream): stamp, keep, count.
            reads, stamp, received, lines = raw.reads, time.perf_counter, 0, 0
            append = reads.append
            async for data in resp.content.iter_any():
                append((stamp(), data))
                received += len(data)
                lines += data.count(b"\n")
                if received > max_bytes or lines > max_lines:
                    # Leaving the block closes the connection: the server's flood stops here.
                    raw.error = (
                        f"the stream passed {min(received, max_bytes) // 1024} KiB / {min(lines, max_lines)} "
                        f"lines for max_tokens={payload.get('max_tokens')}, far more than a vLLM server "
                        "sends: stopped reading it"
                    )
                    return
