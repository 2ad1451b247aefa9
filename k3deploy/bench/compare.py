"""`bench compare`: speedups between runs, per category, tier and overall, beside the published references. Pure.

Runs compare only like for like (SPEED-Bench's and vLLM's own advice): same dataset and subset, same prompt set
(by digest), same output length, same temperature. Anything else is refused with what differs.

Reports with the same label are rounds of one variant (A B A B ..., as `bench --ab --repeat N` writes them, or runs
interleaved by hand); a cell's speedup is then the median of its per-round ratios and its spread their min..max.
With one round, a cell's repeats (--repeat N) pair up instead. A comparison whose ratios spread more than
`SPREAD_LIMIT`, or whose client host was loaded past its CPU count, is called not meaningful, in one line.
"""

from __future__ import annotations

from collections.abc import Sequence

from k3deploy.measure.summary import percentile
from k3deploy.report.bench import BenchReport, CellFigures, Comparison, References, SpeedupRow

#: (max - min) / median of a speedup's per-round ratios above which the speedup says nothing.
SPREAD_LIMIT = 0.25

#: Settings that must be equal, and how to name them to a user.
LIKE_FOR_LIKE = (
    ("dataset", "dataset"),
    ("prompt_set_sha256", "prompt set"),
    ("output_tokens", "output length"),
    ("temperature", "temperature"),
    ("top_p", "top_p"),
)


def differences(reports: Sequence[BenchReport], names: Sequence[str]) -> list[str]:
    """One line per setting that differs from the first run's, naming both values."""
    out = []
    first = reports[0].settings
    for report, name in zip(reports[1:], names[1:], strict=False):
        for key, what in LIKE_FOR_LIKE:
            a, b = getattr(first, key), getattr(report.settings, key)
            if a != b:
                shown = (a[:12], b[:12]) if key == "prompt_set_sha256" else (a, b)
                out.append(f"{what} differs: {names[0]} has {shown[0]}, {name} has {shown[1]}")
    return out


def references(report: BenchReport) -> References:
    """The published figures stored in a report (from its profile's targets)."""
    refs = report.references
    base, spec = refs.get("baseline_decode_tok_s"), refs.get("decode_tok_s")
    return References(
        baseline_decode_tok_s=base,
        decode_tok_s=spec,
        peak_decode_tok_s=refs.get("peak_decode_tok_s"),
        speedup=spec / base if base and spec else None,
    )


def _acceptance(cell: CellFigures | None) -> float | None:
    if cell is None or cell.server is None or cell.server.spec_decode is None:
        return None
    return cell.server.spec_decode.mean_acceptance_length


def groups(reports: Sequence[BenchReport]) -> dict[str, list[BenchReport]]:
    """Reports per label, labels in first-seen order: the rounds of each variant."""
    out: dict[str, list[BenchReport]] = {}
    for report in reports:
        out.setdefault(report.label, []).append(report)
    return out


def _rate(cell: CellFigures | None) -> float | None:
    return cell.decode_tok_s.median if cell is not None else None


def output_rate(cell: CellFigures | None) -> float | None:
    """A cell's output tok/s (TTFT included); for a report written before the field, its output throughput."""
    if cell is None:
        return None
    return cell.output_tok_s if cell.output_tok_s is not None else cell.throughput.output_throughput


def _median(values: Sequence[float]) -> float | None:
    return percentile(values, 50) if values else None


def ratio_samples(base: Sequence[CellFigures | None], other: Sequence[CellFigures | None]) -> list[float]:
    """Per-round ratios other / base; with one round, the ratios of the cells' paired repeats."""
    if len(base) == 1 and len(other) == 1 and base[0] is not None and other[0] is not None:
        a, b = base[0].repeats, other[0].repeats
        if a and len(a) == len(b):
            return [
                y.decode_tok_s / x.decode_tok_s for x, y in zip(a, b, strict=True) if x.decode_tok_s and y.decode_tok_s
            ]
    pairs = zip(base, other, strict=False)
    return [rb / ra for ca, cb in pairs if (ra := _rate(ca)) and (rb := _rate(cb))]


def _row(category: str, level: int, rate: float | None, variants: list[list[BenchReport]]) -> SpeedupRow:
    cells = [[r.cell(category, level, rate) for r in rounds] for rounds in variants]
    medians = [_median([v for c in cs if (v := _rate(c)) is not None]) for cs in cells]
    samples = [ratio_samples(cells[0], cs) for cs in cells]
    firsts = [cs[0] for cs in cells]
    return SpeedupRow(
        category=category,
        concurrency=level,
        request_rate=rate,
        decode_tok_s=medians,
        output_tok_s=[_median([v for c in cs if (v := output_rate(c)) is not None]) for cs in cells],
        speedup=[_median(s) for s in samples],
        speedup_low=[min(s) if s else None for s in samples],
        speedup_high=[max(s) if s else None for s in samples],
        samples=[len(s) for s in samples],
        aggregate_tok_s=[c.aggregate_tok_s if c is not None else None for c in firsts],
        mean_acceptance_length=[_acceptance(c) for c in firsts],
    )


def verdict(rows: Sequence[SpeedupRow], reports: Sequence[BenchReport], labels: Sequence[str]) -> str | None:
    """One line when the overall speedup cannot be trusted: its ratios spread too far, or the host was loaded."""
    loaded = [r for r in reports if r.host is not None and r.host.overloaded()]
    for row in rows:
        if row.category != "overall":
            continue
        for i in range(1, len(labels)):
            mid, low, high = row.speedup[i], row.speedup_low[i], row.speedup_high[i]
            # One ratio is its own low and high: its spread is 0, so only several rounds can fail this.
            if mid and low is not None and high is not None and (high - low) / mid > SPREAD_LIMIT:
                return (
                    f"speedup of {labels[i]} over {labels[0]} is not meaningful: its {row.samples[i]} rounds gave "
                    f"{low:.2f}x..{high:.2f}x (spread {100 * (high - low) / mid:.0f} % > {100 * SPREAD_LIMIT:.0f} %)"
                )
    if loaded:
        host = loaded[0].host
        assert host is not None
        return (
            f"speedup is not meaningful: the client host's load was {host.load_start}..{host.load_end} on "
            f"{host.cpus} CPU(s) during {loaded[0].label} (over its CPU count, timings measure the host)"
        )
    return None


def compare(reports: Sequence[BenchReport], files: Sequence[str]) -> Comparison:
    """Speedup of every variant over the first, per cell of the first run, then overall per load point."""
    variants = list(groups(reports).values())
    first = variants[0][0]
    keys = [(c.category, c.concurrency, c.request_rate) for c in first.cells + first.overall]
    rows = [_row(cat, level, rate, variants) for cat, level, rate in keys]
    labels = [v[0].label for v in variants]
    return Comparison(
        labels=labels,
        files=list(files),
        rows=rows,
        references=references(first),
        rounds=min(len(v) for v in variants),
        verdict=verdict(rows, reports, labels),
    )


def best_per_concurrency(reports: Sequence[BenchReport]) -> dict[int, tuple[str, float]]:
    """Per concurrency level, the run with the highest overall median decode tok/s (the best draft length in a sweep)."""
    best: dict[int, tuple[str, float]] = {}
    for report in reports:
        for cell in report.overall:
            rate = cell.decode_tok_s.median
            if rate is not None and (cell.concurrency not in best or rate > best[cell.concurrency][1]):
                best[cell.concurrency] = (report.label, rate)
    return dict(sorted(best.items()))


def headline(reports: Sequence[BenchReport]) -> list[str]:
    """The lines `bench --ab` / `--sweep` end with: overall speedup (with its spread) over the first run, the best
    run per level, and the verdict line when the speedup is not meaningful."""
    comparison = compare(reports, [r.label for r in reports])
    out = []
    for row in comparison.rows:
        if row.category != "overall":
            continue
        point = f"concurrency {row.concurrency}" if row.request_rate is None else f"rate {row.request_rate:g} req/s"
        for i, label in enumerate(comparison.labels[1:], start=1):
            base, rate, mid = row.decode_tok_s[0], row.decode_tok_s[i], row.speedup[i]
            if base and rate and mid:
                spread = (
                    f", {row.speedup_low[i]:.2f}x..{row.speedup_high[i]:.2f}x over {row.samples[i]} rounds"
                    if row.samples[i] > 1
                    else ", one round: spread unknown (--repeat N)"
                )
                out.append(
                    f"speedup {label} over {comparison.labels[0]} at {point}: "
                    f"{mid:.2f}x ({base:,.1f} -> {rate:,.1f} median decode tok/s{spread})"
                )
    if len(comparison.labels) > 2:
        out += [
            f"best at concurrency {level}: {label} ({rate:,.1f} tok/s)"
            for level, (label, rate) in best_per_concurrency(reports).items()
        ]
    if comparison.verdict:
        out.append(comparison.verdict)
    return out
