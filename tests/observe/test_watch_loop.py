"""watch's clock: ticks on a fixed grid, bounds, and what a failed scrape does, with a fake clock and source."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from k3deploy.errors import EnvironmentProblem, ScrapeError
from k3deploy.observe.watch_figures import WatchFigures
from k3deploy.observe.watch_loop import ticks


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.t += seconds


class FakeSource:
    """Answers a script: None (a baseline), figures, an error, or a scrape that takes `cost` seconds."""

    kind, url = "metrics", "http://test/metrics"

    def __init__(self, clock: FakeClock, script: list[object], cost: float = 0.0) -> None:
        self.clock, self.script, self.cost, self.calls = clock, list(script), cost, 0

    def sample(self) -> WatchFigures | None:
        self.calls += 1
        self.clock.t += self.cost
        item = self.script.pop(0) if self.script else WatchFigures(output_tokens=float(self.calls))
        if isinstance(item, ScrapeError):
            raise item
        return item  # type: ignore[return-value]

    def close(self) -> None:
        pass


def _all(source: FakeSource, clock: FakeClock, **kwargs) -> list:
    now = datetime(2026, 11, 30, tzinfo=UTC)
    return list(ticks(source, 5.0, sleep=clock.sleep, clock=clock, now=lambda: now, **kwargs))


def _run(source: FakeSource, clock: FakeClock, **kwargs) -> list:
    """The ticks with figures or errors (what a JSON line is printed for)."""
    return [tick for tick in _all(source, clock, **kwargs) if not tick.baseline]


def test_a_good_baseline_scrape_is_a_tick_of_its_own() -> None:
    clock = FakeClock()
    out = _all(FakeSource(clock, [None]), clock, count=1)
    assert [tick.baseline for tick in out] == [True, False]
    assert out[0].figures is None and out[0].error is None and out[1].figures is not None


def test_count_counts_intervals_after_the_baseline() -> None:
    clock = FakeClock()
    source = FakeSource(clock, [None])
    out = _run(source, clock, count=3)
    assert len(out) == 3 and source.calls == 4  # one baseline scrape, then one per interval
    assert clock.slept == [5.0, 5.0, 5.0]


def test_a_prometheus_like_source_has_figures_at_once() -> None:
    clock = FakeClock()
    out = _run(FakeSource(clock, []), clock, count=2)
    assert len(out) == 2 and clock.slept == [5.0]


def test_for_stops_before_a_tick_past_the_duration() -> None:
    clock = FakeClock()
    out = _run(FakeSource(clock, [None]), clock, for_s=12.0)
    assert len(out) == 2 and clock.t == 110.0  # ticks at 5 and 10 s; 15 s is past 12


def test_slow_scrapes_keep_the_grid_and_skip_missed_ticks() -> None:
    clock = FakeClock()
    source = FakeSource(clock, [None], cost=7.0)  # each scrape takes longer than the interval
    out = _run(source, clock, count=2)
    # Baseline ends at 7 s: the 5 s tick is missed, the next is at 10 s (sleep 3); that scrape ends at 17 s,
    # so the 15 s tick is missed too and the next is at 20 s (sleep 3).
    assert len(out) == 2 and clock.slept == [3.0, 3.0]


def test_first_failure_is_an_environment_problem() -> None:
    clock = FakeClock()
    with pytest.raises(EnvironmentProblem) as info:
        _run(FakeSource(clock, [ScrapeError("down", "start it")]), clock, count=1)
    assert (
        info.value.message == "first scrape failed: down"
        and info.value.hint == "start it"
        and info.value.exit_code == 3
    )


def test_later_failures_are_ticks_and_the_loop_goes_on() -> None:
    clock = FakeClock()
    out = _run(FakeSource(clock, [None, ScrapeError("boom", "h"), WatchFigures(output_tokens=9.0)]), clock, count=2)
    assert out[0].figures is None and out[0].error is not None and out[0].error.message == "boom"
    assert out[1].error is None and out[1].figures is not None and out[1].figures.output_tokens == 9.0
