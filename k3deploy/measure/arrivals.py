"""Open-loop arrivals as `vllm bench serve` schedules them. Pure.

vllm/benchmarks/serve.py, `get_request`: each gap is drawn from a gamma distribution of shape `burstiness` and
scale 1 / (rate * burstiness) (burstiness 1 is a Poisson process; below 1 burstier, above 1 more even; infinite:
a constant 1 / rate); the gaps are cumulated (the first request waits its gap too) and, for a fixed number of
requests, rescaled so that the last send is at exactly requests / rate. An infinite rate sends all at once.
vLLM draws from numpy's global generator seeded with --seed; here a `random.Random(seed)` draws the same
distribution (the same seed gives the same schedule run after run, not vLLM's exact numbers).
"""

from __future__ import annotations

import math
import random

#: The most arrivals one `--duration` cell schedules.
ARRIVALS_LIMIT = 1_000_000


def gaps(rng: random.Random, rate: float, burstiness: float) -> float:
    """One inter-arrival gap in seconds."""
    if math.isinf(rate):
        return 0.0
    if math.isinf(burstiness):
        return 1.0 / rate
    return rng.gammavariate(burstiness, 1.0 / (rate * burstiness))


def arrival_offsets(n: int, rate: float, burstiness: float, seed: int) -> list[float]:
    """Send offsets (seconds after the start) of `n` requests, rescaled as vLLM's get_request does."""
    if n <= 0:
        return []
    rng = random.Random(seed)
    out, t = [], 0.0
    for _ in range(n):
        t += gaps(rng, rate, burstiness)
        out.append(t)
    if not math.isinf(rate) and out[-1] > 0:
        scale = (n / rate) / out[-1]
        out = [v * scale for v in out]
    return out


def arrivals_within(
    duration_s: float, rate: float, burstiness: float, seed: int, limit: int = ARRIVALS_LIMIT
) -> list[float]:
    """Send offsets of an open-ended stream of requests, all before `duration_s` (no rescaling: the count is free)."""
    rng = random.Random(seed)
    out: list[float] = []
    t = gaps(rng, rate, burstiness)
    while t < duration_s and len(out) < limit:
        out.append(t)
        t += gaps(rng, rate, burstiness)
    return out
