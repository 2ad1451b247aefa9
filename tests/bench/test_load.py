"""Load models: the options that make them, and closed/open loops against the scripted server (real sockets); the
arrival schedule itself is tested in tests/measure/test_arrivals.py."""

from __future__ import annotations

import itertools
import math

import pytest

from k3deploy.bench import load
from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.runner import BenchPlan, run_bench
from k3deploy.errors import UsageError
from k3deploy.measure import arrivals
from k3deploy.profile import load_profile
from k3deploy.report.bench import BenchReport
from tests.smoke.scripted_server import Script, scripted_server


def test_open_loop_flags_need_a_rate() -> None:
    with pytest.raises(UsageError, match="--request-rate"):
        load.load_model([], 1.0, 4, None, 0)
    with pytest.raises(UsageError, match="--request-rate"):
        load.parse_rates("2,0")
    assert load.parse_rates("0.5,inf") == [0.5, math.inf]


def bench(model: load.LoadModel, per_category: int = 3, levels: tuple[int, ...] = (1,)) -> BenchReport:
    dataset = load_dataset("builtin", "throughput")
    plan = BenchPlan(
        dataset, select(dataset, ["mixed"], per_category), list(levels), 8, per_category, "load", load=model
    )
    with scripted_server(Script(chunk_delay_s=0.002)) as srv:
        return run_bench(load_profile("local-cpu"), srv.url, plan)


def in_flight(report: BenchReport) -> int:
    """Most requests open at once, from their send and end stamps."""
    events = sorted([(r.t_send, 1) for r in report.requests] + [(r.t_end, -1) for r in report.requests])
    return max(itertools.accumulate(e for _, e in events))


def test_open_loop_sends_on_schedule_and_records_the_load() -> None:
    report = bench(load.load_model([50.0], 1.0, 1, None, seed=3), per_category=4)
    assert report.settings.load.kind == "open" and report.settings.load.request_rates == [50.0]
    assert [p.model_dump() for p in report.points] == [{"concurrency": 1, "request_rate": 50.0}]
    reqs = report.requests
    assert len(reqs) == 4 and all(r.request_rate == 50.0 and r.t_arrival is not None for r in reqs)
    stamps = [r.t_arrival for r in reqs]
    expected = arrivals.arrival_offsets(4, 50.0, 1.0, seed=3)
    # The schedule is vLLM's, shifted to the cell's start; nothing is sent before its arrival.
    assert [a - stamps[0] for a in stamps] == pytest.approx([e - expected[0] for e in expected], abs=1e-5)
    assert all(r.t_send >= r.t_arrival - 1e-6 for r in reqs)
    assert in_flight(report) == 1  # --max-concurrency 1
    cell = report.cell("mixed", 1, 50.0)
    assert cell is not None and cell.throughput.completed == 4 and cell.throughput.duration_s > 0


def test_closed_loop_duration_keeps_every_slot_busy_until_it_is_up() -> None:
    report = bench(load.load_model([], 1.0, None, 0.4, 0), per_category=2, levels=(2,))
    cell = report.cell("mixed", 2)
    assert cell is not None and report.settings.load.duration_s == 0.4
    assert cell.requests > 4  # prompts cycled past the 2 of the category
    assert max(r.t_send for r in report.requests) - min(r.t_send for r in report.requests) < 0.4 + 0.05
    assert cell.throughput.duration_s >= 0.4
    assert in_flight(report) == 2
