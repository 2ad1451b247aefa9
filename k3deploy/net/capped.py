"""One GET through httpx, its body streamed under a byte cap and the whole exchange inside a time budget.

httpx's timeouts are per operation (connect, each read), so a server that trickles a byte just inside the read
timeout keeps a request alive for ever. Here each request's read timeout is cut to what is left of the caller's
`Deadline` when it starts, and the time is checked after every chunk: a request ends at most one (cut) read
timeout past the deadline, and a command that shares one `Deadline` across its requests (`pin --timeout`, the
preflight registry check) is bounded as a whole. `Accept-Encoding: identity` is asked for, so a compressed body
cannot expand past the cap inside one chunk.
"""

from __future__ import annotations

import time

import httpx

from k3deploy.errors import TooLarge
from k3deploy.kube.deadline import Deadline


class BudgetSpent(httpx.TimeoutException):
    """The caller's deadline passed before or while the answer arrived (an httpx timeout, so callers map it alike)."""


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

    Raises BudgetSpent (an httpx.TimeoutException) when `deadline` passes; other httpx errors as httpx raises them.
    """
    left = deadline.remaining()
    if left is not None and left <= 0:
        raise BudgetSpent(f"the {deadline.seconds:g} s budget was spent before {url} was asked")
    per_read = read_timeout_s if left is None else max(0.05, min(read_timeout_s, left))
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


def budget(seconds: float | None) -> Deadline:
    """A fresh `Deadline` of `seconds` from now (None: only per-read timeouts apply)."""
    return Deadline(seconds, clock=time.monotonic)
