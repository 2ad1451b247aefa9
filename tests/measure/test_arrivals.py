"""vLLM's open-loop arrival schedule (vllm/benchmarks/serve.py, get_request): gamma gaps, rescaled to N / rate. Pure."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from k3deploy.measure import arrivals


def test_arrivals_are_gamma_gaps_rescaled_to_n_over_rate() -> None:
    offsets = arrivals.arrival_offsets(2000, 4.0, 1.0, seed=7)
    assert offsets == arrivals.arrival_offsets(2000, 4.0, 1.0, seed=7)  # seeded
    assert offsets[-1] == pytest.approx(2000 / 4.0)  # vLLM's normalisation: the last send at N / rate
    gaps = [b - a for a, b in itertools.pairwise([0.0, *offsets])]
    cv = statistics.pstdev(gaps) / statistics.fmean(gaps)
    assert cv == pytest.approx(1.0, abs=0.08)  # exponential gaps: Poisson
    bursty = [b - a for a, b in itertools.pairwise([0.0, *arrivals.arrival_offsets(2000, 4.0, 0.25, seed=7)])]
    assert statistics.pstdev(bursty) / statistics.fmean(bursty) == pytest.approx(2.0, abs=0.2)  # 1 / sqrt(shape)
    assert arrivals.arrival_offsets(3, 2.0, math.inf, 0) == pytest.approx([0.5, 1.0, 1.5])
    assert arrivals.arrival_offsets(3, math.inf, 1.0, 0) == [0.0, 0.0, 0.0]
    within = arrivals.arrivals_within(10.0, 5.0, 1.0, seed=1)
    assert all(t < 10.0 for t in within) and 30 < len(within) < 70
