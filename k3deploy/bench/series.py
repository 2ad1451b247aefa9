"""The data of bench's charts, from one or more reports. Pure: the HTML and PNG writers draw exactly these.

1. tok/s per category for each run (median per-request decode tok/s, first load point), with each published
   figure drawn over the category (tier) it was measured on only — never against `overall`;
2. speedup of each run over the first, per category and overall, with a 1.0x line;
3. the load curve: per-user (median decode) tok/s and output throughput per load point (concurrency or rate);
4. acceptance per draft position (overall, first load point), per run that speculates.
"""

from __future__ import annotations

from collections.abc import Sequence

from k3deploy.bench.compare import compare
from k3deploy.kobject import JsonObject
from k3deploy.report.bench import BenchReport

#: Which workload each published figure was measured on (vLLM blog 2026-07-27 "Kimi K3 Is Here", and the
#: 2026-07-29 announcement quoting Inferact's model card): (category it belongs to, its label, a short name).
REFERENCE_TIERS: dict[str, tuple[str, str, str]] = {
    "baseline_decode_tok_s": (
        "random",
        "published without speculation (random 8K in / 1K out)",
        "published, no spec",
    ),
    "decode_tok_s": (
        "low_entropy",
        "published with DSpark (SPEED-Bench throughput_16k, low_entropy tier)",
        "published DSpark",
    ),
    "peak_decode_tok_s": (
        "low_entropy",
        "published peak (low-entropy workload, a separate benchmark)",
        "published peak",
    ),
}


def per_category(reports: Sequence[BenchReport]) -> dict[str, dict[str, float | None]]:
    """{run label: {category: median decode tok/s}} at each run's first load point."""
    out: dict[str, dict[str, float | None]] = {}
    for r in reports:
        if r.label in out:  # a later round of the same variant
            continue
        p = r.first_point()
        out[r.label] = {
            c.category: c.decode_tok_s.median
            for c in r.cells
            if c.concurrency == p.concurrency and c.request_rate == p.request_rate
        }
    return out


def speedups(reports: Sequence[BenchReport]) -> dict[str, dict[str, float | None]]:
    """{run label: {category or overall: speedup over the first run}} at the first load point, runs after the first
    (reports sharing a label are rounds: the median of their ratios)."""
    comparison = compare(reports, [r.label for r in reports])
    p = reports[0].first_point()
    rows = [r for r in comparison.rows if r.concurrency == p.concurrency and r.request_rate == p.request_rate]
    return {label: {row.category: row.speedup[i] for row in rows} for i, label in enumerate(comparison.labels) if i > 0}


def published(reports: Sequence[BenchReport]) -> list[JsonObject]:
    """The published figures of the first report, each with the category (tier) it belongs to and its label."""
    refs = reports[0].references
    return [
        {"key": key, "value": refs[key], "category": category, "label": label, "short": short}
        for key, (category, label, short) in REFERENCE_TIERS.items()
        if refs.get(key)
    ]


def load_curve(reports: Sequence[BenchReport]) -> dict[str, JsonObject]:
    """{run label: {x: "concurrency" | "request_rate", points: [...], per_user_tok_s, output_throughput}}."""
    out: dict[str, JsonObject] = {}
    for r in reports:
        if r.label in out:
            continue
        open_loop = r.settings.load.kind == "open"
        out[r.label] = {
            "x": "request_rate" if open_loop else "concurrency",
            "points": [c.request_rate if open_loop else c.concurrency for c in r.overall],
            "per_user_tok_s": [c.decode_tok_s.median for c in r.overall],
            "output_throughput": [c.throughput.output_throughput for c in r.overall],
        }
    return out


def acceptance(reports: Sequence[BenchReport]) -> dict[str, dict[int, float]]:
    """{run label: {draft position: accepted / drafts}} for runs whose server reported spec-decode counters."""
    out: dict[str, dict[int, float]] = {}
    for r in reports:
        if r.label in out:
            continue
        p = r.first_point()
        cell = r.cell("overall", p.concurrency, p.request_rate)
        spec = cell.server.spec_decode if cell is not None and cell.server is not None else None
        if spec is not None and spec.per_position_rates:
            out[r.label] = dict(sorted(spec.per_position_rates.items()))
    return out


def all_series(reports: Sequence[BenchReport]) -> JsonObject:
    """Every chart's data in one JSON-able dict (embedded in the HTML)."""
    return {
        "per_category": per_category(reports),
        "speedups": speedups(reports) if len({r.label for r in reports}) > 1 else {},
        "published": published(reports),
        "load_curve": load_curve(reports),
        "acceptance_per_position": {k: {str(p): v for p, v in d.items()} for k, d in acceptance(reports).items()},
    }
