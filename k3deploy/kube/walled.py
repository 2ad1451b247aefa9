"""A wall-clock bound on each urllib3 request's send and head: the socket is shut down when its time is up.

urllib3's read timeout bounds each `recv`, so an API (or a proxy) that sends its status line and headers one byte
at a time, each just inside that timeout, keeps a request in `getresponse` for ever; a body is bounded where it
is read (kube/bounded.py), the head is read inside urllib3 before any caller code runs. `walled` puts connection
pools into a `PoolManager` whose `_make_request` (urllib3/connectionpool.py: send the request, read the head)
runs under a timer: at the instant `until` sets, the connection's socket is shut down (the reading thread's
`recv` returns at once, on TLS too) and a `ReadTimeoutError` is raised, which urllib3's retries do not outlast:
past the instant, a request is not sent at all.
"""

from __future__ import annotations

import contextlib
import contextvars
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import urllib3
from urllib3.exceptions import ReadTimeoutError

#: The monotonic instant the current request must have its head by (None: per-read timeouts only).
_UNTIL: contextvars.ContextVar[float | None] = contextvars.ContextVar("k3deploy_walled_until", default=None)


@contextlib.contextmanager
def until(seconds: float) -> Iterator[None]:
    """Requests made inside the block (in this thread) get their head within `seconds` from now."""
    token = _UNTIL.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _UNTIL.reset(token)


def _shut(conn: Any, fired: threading.Event) -> None:
    sock = getattr(conn, "sock", None)
    fired.set()
    if sock is not None:
        # socket.socket's own shutdown: SSLSocket's would unwrap the TLS object under the reading thread's feet.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Walled:
    """A mixin for urllib3's connection pools: each request's send and head inside the current `until`."""

    def _make_request(self, conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        at = _UNTIL.get()
        if at is None:
            return super()._make_request(conn, method, url, *args, **kwargs)  # type: ignore[misc]
        left = at - time.monotonic()
        if left <= 0:
            raise ReadTimeoutError(self, url, "the request's whole time was spent")  # type: ignore[arg-type]
        fired = threading.Event()
        timer = threading.Timer(left, _shut, (conn, fired))
        timer.daemon = True
        timer.start()
        try:
            response = super()._make_request(conn, method, url, *args, **kwargs)  # type: ignore[misc]
        except Exception as exc:
            if fired.is_set():
                raise ReadTimeoutError(self, url, "its status line and headers outlasted the request's time") from exc  # type: ignore[arg-type]
            raise
        finally:
            timer.cancel()
        if fired.is_set():
            # http.client takes the end of the stream for the end of the headers: a head cut short looks whole.
            # (urlopen closes the connection of a request that raised; it goes back to the pool as None.)
            raise ReadTimeoutError(self, url, "its status line and headers outlasted the request's time")  # type: ignore[arg-type]
        return response


class WalledHTTPConnectionPool(_Walled, urllib3.HTTPConnectionPool):
    """urllib3's HTTP pool, each request's head inside `until`."""


class WalledHTTPSConnectionPool(_Walled, urllib3.HTTPSConnectionPool):
    """urllib3's HTTPS pool, each request's head inside `until`."""


def walled(manager: urllib3.PoolManager) -> None:
    """Make `manager` open walled pools (a SOCKS manager's own pool classes are left as they are)."""
    if manager.pool_classes_by_scheme.get("https") is not urllib3.HTTPSConnectionPool:
        return
    manager.pool_classes_by_scheme = {"http": WalledHTTPConnectionPool, "https": WalledHTTPSConnectionPool}
    manager.clear()  # pools made before now are of the plain classes
