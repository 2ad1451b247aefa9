"""The I/O edge of smoke and bench: an async client that records raw arrival stamps and translates failures once.

Every network failure becomes an `EndpointError` with a kind (unreachable, unauthorized, http, timeout,
protocol) and a one-line message that keeps the underlying reason (`translate`, the one place); streams never
raise, they return a `RawStream` whose `error` says what went wrong, so one bad request does not end the run.

Every request, plain answers (/health, /v1/models, /version, /metrics) and streams alike, goes through one aiohttp
session, as `vllm bench serve` does (vllm/benchmarks/lib/endpoint_request_func.py): its C HTTP parser costs a
fraction per chunk of a pure-Python one, and a streaming client's own CPU per token is what bounds how fast a
stream it can time honestly. The hot loop only stamps and keeps each read (`time.perf_counter`, the bytes as they
came); decoding waits for the stream's end (`record.build_record`).

Nothing an endpoint sends is read without a bound: plain answers up to `BODY_LIMITS` bytes, an error answer up to
`ERROR_BODY_LIMIT`, a stream up to `stream_limits(max_tokens)` (far above what vLLM sends for that many tokens), so
a hostile or broken endpoint that floods cannot make smoke grow without end; what passes a bound is an error, not
data. Bodies are asked for and read uncompressed, so a bound on bytes read is a bound on bytes kept. Every request
ends by its whole deadline: a plain GET by its connect plus read timeouts added up, a stream by
smoke.request_timeout_s, however slowly the server trickles its head or body.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import aiohttp
import yarl

from k3deploy.errors import EndpointError, cause_chain
from k3deploy.kobject import JsonObject
from k3deploy.measure.record import RawStream
from k3deploy.redact import redact_url

#: Seconds an idle connection is kept for reuse: well under vLLM's server-side 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE).
KEEPALIVE_S = 2.0
#: Most bytes read from each plain answer. vLLM's /health is empty, its model list a few hundred bytes per model
#: and its /metrics some hundreds of KB for a multi-engine server.
BODY_LIMITS = {"/health": 64 * 1024, "/version": 64 * 1024, "/v1/models": 4 * 1024 * 1024, "/metrics": 8 * 1024 * 1024}
#: Most bytes read from a stream's error answer: its message goes into one line of the report.
ERROR_BODY_LIMIT = 64 * 1024
#: Longest wait for a connection (a free slot of the pool, the TCP connect, the TLS handshake).
CONNECT_TIMEOUT_S = 10.0
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


def translate(exc: aiohttp.ClientError, url: str) -> EndpointError:
    """The one place the client's failures become EndpointErrors (kind + message naming the URL and the reason)."""
    chain = cause_chain(exc)
    reason = str(chain[-1]) or type(chain[-1]).__name__
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return EndpointError("unreachable", f"connecting to {url} timed out")
    if isinstance(exc, aiohttp.SocketTimeoutError):
        # Worded as every k3deploy client words a read that outlived its timeout (net/httpx_errors.py).
        return EndpointError("timeout", f"{url} did not answer in time (ReadTimeout)")
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return EndpointError("timeout", f"{url} did not answer in time ({type(exc).__name__})")
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return EndpointError("unreachable", f"DNS lookup failed for {yarl.URL(url).host}: {reason}")
    if isinstance(exc, (aiohttp.ClientSSLError, aiohttp.ServerFingerprintMismatch)) or any(
        isinstance(c, ssl.SSLError) for c in chain
    ):
        return EndpointError("unreachable", f"TLS handshake with {url} failed: {reason}")
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return EndpointError("unreachable", f"cannot connect to {url}: connection refused (nothing listens there)")
        return EndpointError("unreachable", f"cannot connect to {url}: {reason}")
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        # Connected, then closed with no status line at all (a port-forward with nothing behind the pod's port):
        # nothing answered, so nothing was judged.
        return EndpointError("unreachable", f"connection to {url} closed before any HTTP answer ({reason})")
    if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
        return EndpointError("protocol", f"connection to {url} broke: {reason}")
    return EndpointError("protocol", f"{url}: {type(exc).__name__}: {reason}")


def _status_error(status: int, url: str, body: str) -> EndpointError:
    excerpt = " ".join(body.split())[:200]
    if status in (401, 403):
        return EndpointError("unauthorized", f"{url} answered {status}: {excerpt or 'unauthorized'}")
    return EndpointError("http", f"{url} answered {status}: {excerpt}")


async def _read_capped(resp: aiohttp.ClientResponse, limit: int, url: str, *, fail: bool) -> bytes:
    """Up to `limit` bytes of a body; past it, an EndpointError when `fail`, else what was read, cut."""
    declared = resp.headers.get("Content-Length", "")
    too_big = EndpointError("protocol", f"{url} answered more than {limit // 1024} KiB; smoke reads at most that")
    if fail and declared.isdigit() and int(declared) > limit:
        raise too_big
    parts, size = [], 0
    async for data in resp.content.iter_any():
        parts.append(data)
        size += len(data)
        if size > limit:
            if fail:
                raise too_big
            break
    return b"".join(parts)[:limit]


def _text(resp: aiohttp.ClientResponse, body: bytes) -> str:
    """`body` decoded by the charset its Content-Type names (UTF-8 when it names none, or none Python knows)."""
    charset = resp.charset or "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"
    return body.decode(charset, "replace")


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
    itself and shifts once per request. `middlewares` (aiohttp client middlewares) see every request, plain and
    streamed: what a test puts between the client and the servers.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        request_timeout_s: float = 600.0,
        max_connections: int = 32,
        middlewares: Sequence[aiohttp.ClientMiddlewareType] = (),
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        #: The base URL as messages show it: credentials in its userinfo redacted.
        self.shown_url = redact_url(self.base_url)
        self.request_timeout_s = request_timeout_s
        self.max_connections = max_connections
        start = time.perf_counter()
        self.clock = clock or (lambda: time.perf_counter() - start)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._middlewares = tuple(middlewares)
        self._session: aiohttp.ClientSession | None = None
        #: Model id -> max_model_len, from the last /v1/models that listed it.
        self.max_model_len: dict[str, int] = {}
        # The client's one set of timeouts. A stream's whole time is bounded by `stream`'s wait_for; a per-read timer
        # would be re-armed for every chunk that arrives, a cost per token for nothing. A plain GET bounds each read
        # by the request timeout as well as its whole answer by `_whole_s`.
        self._connect_s = min(CONNECT_TIMEOUT_S, request_timeout_s)
        self._stream_timeout = aiohttp.ClientTimeout(total=None, connect=self._connect_s)
        self._get_timeout = aiohttp.ClientTimeout(total=None, connect=self._connect_s, sock_read=request_timeout_s)

    async def __aenter__(self) -> SmokeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    def _http(self) -> aiohttp.ClientSession:
        """The one session of every request, made on first use (it must be made inside the running loop)."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                # Asked uncompressed, read uncompressed: a bound on bytes read is then a bound on bytes kept.
                headers={**self._headers, "Accept-Encoding": "identity"},
                # vLLM's server drops a connection idle for 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE); aiohttp would keep it
                # 15 s and a request sent on it as the server closes it fails ("Server disconnected"): drop it first.
                connector=aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=KEEPALIVE_S),
                timeout=self._stream_timeout,
                auto_decompress=False,
                middlewares=self._middlewares,
            )
        return self._session

    def _url(self, path: str) -> str:
        return self.base_url + path

    def _shown(self, path: str) -> str:
        return self.shown_url + path

    async def _get(self, path: str) -> tuple[int, str]:
        """Status and text of a GET, its body read up to `BODY_LIMITS[path]` bytes (past it: a protocol error).

        The whole exchange, status line and headers included, ends within its connect and read timeouts added up
        (`_whole_s`): the read timeout bounds each read, and a server trickling its head a byte at a time would
        otherwise hold the GET for ever. A server that sends nothing still ends at the read timeout first.
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
        return self.request_timeout_s + self._connect_s

    async def _get_within(self, path: str) -> tuple[int, str]:
        url, limit = self._shown(path), BODY_LIMITS[path]
        try:
            async with self._http().get(self._url(path), timeout=self._get_timeout, allow_redirects=False) as resp:
                body = await _read_capped(resp, limit, url, fail=True)
                return resp.status, _text(resp, body)
        except aiohttp.ClientError as exc:
            raise translate(exc, url) from None

    async def health(self) -> int:
        """Status code of GET /health (401/403 raise: the key is wrong, not the engine)."""
        status, text = await self._get("/health")
        if status in (401, 403):
            raise _status_error(status, self._shown("/health"), text)
        return status

    async def models(self) -> list[str]:
        """Ids listed by GET /v1/models; each one's `max_model_len` (vLLM's ModelCard) goes to `max_model_len`."""
        status, text = await self._get("/v1/models")
        if status != 200:
            raise _status_error(status, self._shown("/v1/models"), text)
        try:
            data = json.loads(text)["data"]
            ids = [str(item["id"]) for item in data]
        except (ValueError, KeyError, TypeError):
            raise EndpointError(
                "protocol", f"{self._shown('/v1/models')} did not answer an OpenAI model list: {text[:120]!r}"
            ) from None
        self.max_model_len = {
            str(item["id"]): item["max_model_len"]
            for item in data
            if type(item.get("max_model_len")) is int and item["max_model_len"] > 0
        }
        return ids

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

    async def stream(self, path: str, payload: JsonObject) -> RawStream:
        """POST a streaming request and record each read with its arrival stamp; never raises for endpoint failures."""
        raw = RawStream(t_send=self.clock())
        raw.reads_shift = raw.t_send - time.perf_counter()
        try:
            await asyncio.wait_for(self._stream_into(raw, path, payload), timeout=self.request_timeout_s)
        except EndpointError as exc:
            raw.error = exc.message
        # Before TimeoutError: aiohttp's own timeouts (a connect that outlived its bound) are TimeoutErrors too.
        except aiohttp.ClientError as exc:
            raw.error = translate(exc, self._shown(path)).message
        except TimeoutError:
            raw.error = f"request timed out after {self.request_timeout_s:g} s (smoke.request_timeout_s)"
        raw.t_end = self.clock()
        return raw

    async def _stream_into(self, raw: RawStream, path: str, payload: JsonObject) -> None:
        max_bytes, max_lines = stream_limits(int(payload.get("max_tokens") or 1))
        async with self._http().post(self._url(path), json=payload) as resp:
            if resp.status != 200:
                body = await _read_capped(resp, ERROR_BODY_LIMIT, self._shown(path), fail=False)
                raise _status_error(resp.status, self._shown(path), _text(resp, body))
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
