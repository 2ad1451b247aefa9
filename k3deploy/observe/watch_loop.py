"""The clock of `k3deploy watch`: sample a source once per interval, until a count or a duration is reached.

The first sample must succeed (else EnvironmentProblem: exit 3, nothing to watch); a later failure becomes a
tick carrying the error, and the loop keeps going. Ticks fall on a fixed grid (start + k x interval), so a slow
scrape does not make the view drift; a scrape that overran a tick skips to the next one on the grid.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from k3deploy.errors import EnvironmentProblem, ScrapeError
from k3deploy.observe.watch_figures import WatchFigures


class Source(Protocol):
    """What the loop samples: a MetricsSource or a PrometheusSource."""

    kind: str
    url: str

    def sample(self) -> WatchFigures | None:
        """The latest interval's figures (None: a baseline only); ScrapeError when it failed."""

    def close(self) -> None:
        """Release connections."""


@dataclass(frozen=True)
class Tick:
    """One interval: its figures, or the error that kept it from having any."""

    at: datetime
    figures: WatchFigures | None
    error: ScrapeError | None = None
    #: The first /metrics scrape went well: no figures yet, but something to watch (not counted, not printed as JSON).
    baseline: bool = False


def _utcnow() -> datetime:
    return datetime.now(UTC)


def ticks(
    source: Source,
    interval_s: float,
    *,
    count: int | None = None,
    for_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    now: Callable[[], datetime] = _utcnow,
) -> Generator[Tick, None, None]:
    """One Tick per interval: at most `count` of them, none due after `for_s` seconds; unbounded without either.

    The first sample sets the baseline: a /metrics source has no figures for it (a `baseline` tick, not counted);
    a Prometheus one does, and that is the first tick.
    """
    start = clock()
    try:
        first = source.sample()
    except ScrapeError as exc:
        raise EnvironmentProblem(f"first scrape failed: {exc.message}", hint=exc.hint) from None
    emitted = 0
    if first is None:
        yield Tick(now(), None, baseline=True)
    else:
        yield Tick(now(), first)
        emitted += 1
    step = 0
    while count is None or emitted < count:
        step = max(step + 1, math.ceil((clock() - start) / interval_s))
        due = start + step * interval_s
        if for_s is not None and step * interval_s > for_s:
            return
        wait = due - clock()
        if wait > 0:
            sleep(wait)
        try:
            tick = Tick(now(), source.sample())
        except ScrapeError as exc:
            tick = Tick(now(), None, exc)
        yield tick
        emitted += 1
