"""The measurement window of smoke and bench: scrape /metrics, offer a batch under one load point
(k3deploy.measure.dispatch), scrape again. Smoke's measured bs=1 requests are one window at concurrency 1; each
repeat of a bench cell is one window at its point. The server's counters between the two scrapes belong to the
window's requests alone, since nothing else is sent while it is open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from k3deploy.errors import EndpointError, MetricsFormatError
from k3deploy.measure import metrics
from k3deploy.measure.dispatch import SendOne, dispatch
from k3deploy.report.bench import LoadModel, Point

if TYPE_CHECKING:
    from k3deploy.measure.client import SmokeClient

T = TypeVar("T")
P = TypeVar("P")


@dataclass(frozen=True)
class Window(Generic[T]):
    """What one window measured: each request's result in send order, the scrapes on either side (None when
    /metrics could not be read, with the first reason in `error`) and the wall time of the requests."""

    results: list[T]
    before: metrics.MetricsSnapshot | None
    after: metrics.MetricsSnapshot | None
    error: str | None
    duration_s: float


async def scrape(client: SmokeClient) -> tuple[metrics.MetricsSnapshot | None, str | None]:
    """One /metrics scrape, parsed; (None, why) when the endpoint has none or it is malformed."""
    try:
        text, started, finished = await client.metrics()
        return metrics.parse_metrics(text, started, finished), None
    except (EndpointError, MetricsFormatError) as exc:
        return None, f"/metrics unavailable: {exc}"


async def measure_window(
    client: SmokeClient,
    send: SendOne[P, T],
    batch: Sequence[P],
    point: Point,
    model: LoadModel,
    seed: int,
    clock: Callable[[], float] | None = None,
) -> Window[T]:
    """Scrape, offer `batch` at `point` under `model`, scrape again (only when the first scrape worked)."""
    before, error = await scrape(client)
    results, duration = await dispatch(send, batch, point, model, seed, clock or client.clock)
    after, error_after = await scrape(client) if before is not None else (None, None)
    return Window(results, before, after, error or error_after, duration)
