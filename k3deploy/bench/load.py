"""Open-loop arrivals as `vllm bench serve` schedules them, and the load points of a run. Pure.

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

from k3deploy.errors import UsageError
from k3deploy.report.bench import LoadModel, Point


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
    duration_s: float, rate: float, burstiness: float, seed: int, limit: int = 1_000_000
) -> list[float]:
    """Send offsets of an open-ended stream of requests, all before `duration_s` (no rescaling: the count is free)."""
    rng = random.Random(seed)
    out: list[float] = []
    t = gaps(rng, rate, burstiness)
    while t < duration_s and len(out) < limit:
        out.append(t)
        t += gaps(rng, rate, burstiness)
    return out


def parse_rates(raw: str | None) -> list[float]:
    """`--request-rate 1,2,4` (req/s, `inf` allowed) as a list; None when not given."""
    if raw is None:
        return []
    rates = []
    for item in raw.split(","):
        try:
            rate = float(item)
        except ValueError:
            rate = -1.0
        if not rate > 0:
            raise UsageError(f"--request-rate {raw!r}: {item.strip()!r} is not a positive number", hint="e.g. 0.5,1,2")
        rates.append(rate)
    return rates


def load_model(
    rates: list[float], burstiness: float, max_concurrency: int | None, duration_s: float | None, seed: int
) -> LoadModel:
    """The load model the flags describe; --burstiness and --max-concurrency need a rate."""
    if burstiness <= 0:
        raise UsageError(
            f"--burstiness {burstiness:g} must be positive", hint="1 is Poisson; 0.5 burstier; 2 more even"
        )
    if not rates and (burstiness != 1.0 or max_concurrency is not None):
        raise UsageError(
            "--burstiness and --max-concurrency shape an open-loop load: give --request-rate",
            hint="e.g. --request-rate 2 --max-concurrency 4 (closed loop: --concurrency 1,2,4)",
        )
    return LoadModel(
        kind="open" if rates else "closed",
        request_rates=rates,
        burstiness=burstiness,
        max_concurrency=max_concurrency,
        duration_s=duration_s,
        seed=seed,
    )


def points(load: LoadModel, concurrency: list[int]) -> list[Point]:
    """The load points in run order: each concurrency level (closed), or each rate (open).

    An open-loop point's concurrency is its cap, --max-concurrency, or 0 for none.
    """
    if load.kind == "closed":
        return [Point(concurrency=level) for level in sorted(set(concurrency))]
    return [Point(concurrency=load.max_concurrency or 0, request_rate=rate) for rate in load.request_rates]
