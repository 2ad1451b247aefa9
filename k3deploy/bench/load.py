"""The load model and the load points of a bench run, from its options. Pure. The arrivals an open-loop point
sends at are scheduled by k3deploy.measure.arrivals (vLLM's get_request)."""

from __future__ import annotations

from k3deploy.errors import UsageError
from k3deploy.report.bench import LoadModel, Point


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
