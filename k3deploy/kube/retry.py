"""Retrying transient API failures (429, 5xx, dropped connections) with backoff that honours Retry-After."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from k3deploy.kube.errors import is_transient

if TYPE_CHECKING:
    from tenacity import RetryCallState

T = TypeVar("T")

#: Attempts per call, first one included; with the backoff below about half a minute in all.
MAX_ATTEMPTS = 7
#: Longest single wait, in seconds, whatever Retry-After says.
MAX_WAIT_S = 10.0


def retry_after_s(exc: BaseException | None) -> float | None:
    """Seconds from a Retry-After header on an ApiException, when present and numeric."""
    headers = getattr(exc, "headers", None)
    if not headers:
        return None
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class _WaitRetryAfter:
    """Exponential backoff with jitter, but never shorter than the server's Retry-After."""

    def __init__(self) -> None:
        # tenacity loads only when a cluster is used: `render` (whose target imports kube/) never pays for it.
        from tenacity import wait_exponential, wait_random

        self._backoff = wait_exponential(multiplier=0.2, max=MAX_WAIT_S) + wait_random(0, 0.2)

    def __call__(self, state: RetryCallState) -> float:
        backoff = self._backoff(state)
        exc = state.outcome.exception() if state.outcome else None
        hinted = retry_after_s(exc)
        return min(MAX_WAIT_S, max(backoff, hinted)) if hinted is not None else backoff


def call_with_retries(func: Callable[..., T], *args: Any, attempts: int = MAX_ATTEMPTS, **kwargs: Any) -> T:
    """Call `func`, retrying transient failures; the last error is re-raised unchanged."""
    # tenacity loads only when a cluster is used: `render` (whose target imports kube/) never pays for it.
    from tenacity import Retrying, retry_if_exception, stop_after_attempt

    retrying = Retrying(
        retry=retry_if_exception(is_transient),
        wait=_WaitRetryAfter(),
        stop=stop_after_attempt(attempts),
        reraise=True,
    )
    return retrying(func, *args, **kwargs)
