"""One GET through httpx, its body streamed under a byte cap and the whole exchange inside a time budget.

httpx's timeouts are per operation (connect, each read), so a server that trickles a byte just inside the read
timeout keeps a request alive for ever. Here each request's read timeout is cut to what is left of the caller's
`Deadline` when it starts, and the time is checked after every chunk: a request ends at most one (cut) read
timeout past the deadline, and a command that shares one `Deadline` across its requests (`pin --timeout`, the
preflight registry check) is bounded as a whole. `Accept-Encoding: identity` is asked for, so a compressed body
cannot expand past the cap inside one chunk.

The status line and headers are read inside httpcore, before any chunk: a server that trickles them a byte at a
time would hold the request for ever between the chunk checks. So the client's connections read through
`_BoundedStream`, which cuts every socket wait (connect, TLS handshake, each read and write) to what is left of
the request's wall deadline and raises httpcore's own timeout once it has passed. httpx 0.28 takes no network
backend of its own, so `_bound` puts it into the client's connection pools (httpcore.ConnectionPool's
`_network_backend`, httpcore/_sync/connection_pool.py), once per client.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from k3deploy.errors import TooLarge
from k3deploy.kube.deadline import Deadline


class BudgetSpent(httpx.TimeoutException):
    """The caller's deadline passed before or while the answer arrived (an httpx timeout, so callers map it alike)."""


#: The monotonic instant the current request must be done by (None outside `get_capped`: per-read timeouts only).
_UNTIL: contextvars.ContextVar[float | None] = contextvars.ContextVar("k3deploy_net_until", default=None)


def _cut(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    """`timeout` cut to what is left of the current request's deadline; `expired` raised once none is left."""
    until = _UNTIL.get()
    if until is None:
        return timeout
    left = until - time.monotonic()
    if left <= 0:
        raise expired("the request's whole time was spent")
    return left if timeout is None else min(timeout, left)


class _BoundedStream(httpcore.NetworkStream):
    """A connection whose every wait ends by the current request's deadline (the socket's own timeout per call)."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """One read, waiting no longer than the request has left."""
        return self._inner.read(max_bytes, _cut(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """One write, waiting no longer than the request has left."""
        self._inner.write(buffer, _cut(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        """Close the connection."""
        self._inner.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        """The TLS handshake inside the request's time; the TLS connection is bounded alike."""
        tls = self._inner.start_tls(ssl_context, server_hostname, _cut(timeout, httpcore.ConnectTimeout))
        return _BoundedStream(tls)

    def get_extra_info(self, info: str) -> Any:
        """What the wrapped connection says (its socket, its TLS object)."""
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore.NetworkBackend):
    """Opens `_BoundedStream`s: the connect itself, and every later wait, inside the request's deadline."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        """A TCP connection, its connect bounded by the request's deadline."""
        return _BoundedStream(
            self._inner.connect_tcp(host, port, _cut(timeout, httpcore.ConnectTimeout), local_address, socket_options)
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        """A Unix socket connection, bounded alike."""
        return _BoundedStream(
            self._inner.connect_unix_socket(path, _cut(timeout, httpcore.ConnectTimeout), socket_options)
        )

    def sleep(self, seconds: float) -> None:
        """As the wrapped backend sleeps."""
        self._inner.sleep(seconds)


def _bound(http: httpx.Client) -> None:
    """Make every connection pool of `http` (its transport and its proxy mounts) open `_BoundedStream`s."""
    transports = [getattr(http, "_transport", None), *getattr(http, "_mounts", {}).values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is not None and not isinstance(backend, _BoundedBackend):
            pool._network_backend = _BoundedBackend(backend)  # type: ignore[union-attr]


def get_capped(
    http: httpx.Client,
    url: str,
    *,
    limit: int,
    error_limit: int,
    deadline: Deadline,
    read_timeout_s: float,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> tuple[httpx.Response, bytes]:
    """(response, body): a 200's body read to at most `limit` bytes (TooLarge past it), another's to `error_limit`.

    The whole exchange, head included, ends by `deadline` (by 4 read timeouts without one). Raises BudgetSpent (an
    httpx.TimeoutException) when that time passes; other httpx errors as httpx raises them.
    """
    left = deadline.remaining()
    if left is not None and left <= 0:
        raise BudgetSpent(f"the {deadline.seconds:g} s budget was spent before {url} was asked")
    per_read = read_timeout_s if left is None else max(0.05, min(read_timeout_s, left))
    whole = 4 * read_timeout_s if left is None else max(0.05, left)
    _bound(http)
    until = time.monotonic() + whole
    token = _UNTIL.set(until)
    try:
        return _exchange(http, url, limit, error_limit, deadline, per_read, headers, params)
    except httpx.TimeoutException as exc:
        if isinstance(exc, BudgetSpent) or time.monotonic() < until:
            raise
        raise BudgetSpent(f"{url} was still answering (its head or body) when its {whole:.3g} s ran out") from exc
    finally:
        _UNTIL.reset(token)


def _exchange(
    http: httpx.Client,
    url: str,
    limit: int,
    error_limit: int,
    deadline: Deadline,
    per_read: float,
    headers: dict[str, str] | None,
    params: dict[str, str] | None,
) -> tuple[httpx.Response, bytes]:
    """The GET itself: the body read chunk by chunk under its cap, the caller's deadline checked after each."""
    sent = {"Accept-Encoding": "identity", **(headers or {})}
    chunks: list[bytes] = []
    received = 0
    with http.stream("GET", url, headers=sent, params=params, timeout=httpx.Timeout(per_read)) as response:
        cap = limit if response.status_code == 200 else error_limit
        for chunk in response.iter_bytes():
            received += len(chunk)
            if received > cap:
                if response.status_code == 200:
                    raise TooLarge(f"{url} answered over {limit} bytes")
                chunks.append(chunk[: cap - (received - len(chunk))])
                break
            chunks.append(chunk)
            if deadline.expired():
                raise BudgetSpent(
                    f"the answer from {url} was still arriving when the {deadline.seconds:g} s budget ran out"
                )
    return response, b"".join(chunks)


def answers_200(url: str, seconds: float, limit: int = 64 * 1024) -> bool:
    """True when a GET of `url` answers 200 within `seconds` as a whole (a probe: any failure is False)."""
    try:
        with httpx.Client() as http:
            response, _ = get_capped(
                http, url, limit=limit, error_limit=limit, deadline=budget(seconds), read_timeout_s=seconds
            )
    except (httpx.HTTPError, httpx.InvalidURL, TooLarge):
        return False
    return response.status_code == 200


def budget(seconds: float | None) -> Deadline:
    """A fresh `Deadline` of `seconds` from now (None: only per-read timeouts apply)."""
    return Deadline(seconds, clock=time.monotonic)
