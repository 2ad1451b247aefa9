"""The data of bench's four charts, from one or more reports. Pure: the HTML and PNG writers draw exactly these.

1. tok/s per category for each run (median per-request decode tok/s, lowest concurrency level);
2. speedup of each run over the first, per category and overall, beside the published speedup; with one run,
   its overall tok/s beside the published tok/s figures;
3. the concurrency curve: per-user (median decode) and aggregate tok/s per concurrency level, per run;
4. acceptance per draft position (overall, lowest concurrency level), per run that speculates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from k3deploy.bench.compare import references
from k3deploy.report.bench import BenchReport


def _low(report: BenchReport) -> int:
    return min(report.settings.concurrency)


def per_category(reports: Sequence[BenchReport]) -> dict[str, dict[str, float | None]]:
    """{run label: {category: median decode tok/s}} at each run's lowest concurrency."""
    return {r.label: {c.category: c.decode_tok_s.median for c in r.cells if c.concurrency == _low(r)} for r in reports}


def speedups(reports: Sequence[BenchReport]) -> dict[str, dict[str, float | None]]:
    """{run label: {category or overall: speedup over the first run}} for every run after the first."""
    first = reports[0]
    level = _low(first)
    out: dict[str, dict[str, float | None]] = {}
    for report in reports[1:]:
        row: dict[str, float | None] = {}
        for cell in [*(c for c in first.cells if c.concurrency == level), first.cell("overall", level)]:
            if cell is None:
                continue
            other = report.cell(cell.category, level)
            a, b = cell.decode_tok_s.median, other.decode_tok_s.median if other is not None else None
            row[cell.category] = b / a if a and b else None
        out[report.label] = row
    return out


def published(reports: Sequence[BenchReport]) -> dict[str, float | None]:
    """The published figures (tok/s and speedup) stored in the first report."""
    return references(reports[0]).model_dump()


def overall_tok_s(reports: Sequence[BenchReport]) -> dict[str, float | None]:
    """{run label: overall median decode tok/s at its lowest concurrency}."""
    out: dict[str, float | None] = {}
    for r in reports:
        cell = r.cell("overall", _low(r))
        out[r.label] = cell.decode_tok_s.median if cell is not None else None
    return out


def concurrency_curve(reports: Sequence[BenchReport]) -> dict[str, dict[str, list[Any]]]:
    """{run label: {concurrency: [...], per_user_tok_s: [...], aggregate_tok_s: [...]}}."""
    return {
        r.label: {
            "concurrency": [c.concurrency for c in r.overall],
            "per_user_tok_s": [c.decode_tok_s.median for c in r.overall],
            "aggregate_tok_s": [c.aggregate_tok_s for c in r.overall],
        }
        for r in reports
    }


def acceptance(reports: Sequence[BenchReport]) -> dict[str, dict[int, float]]:
    """{run label: {draft position: accepted / drafts}} for runs whose server reported spec-decode counters."""
    out: dict[str, dict[int, float]] = {}
    for r in reports:
        cell = r.cell("overall", _low(r))
        spec = cell.server.spec_decode if cell is not None and cell.server is not None else None
        if spec is not None and spec.per_position_rates:
            out[r.label] = dict(sorted(spec.per_position_rates.items()))
    return out


def all_series(reports: Sequence[BenchReport]) -> dict[str, Any]:
    """Every chart's data in one JSON-able dict (embedded in the HTML)."""
    return {
        "per_category": per_category(reports),
        "speedups": speedups(reports),
        "overall_tok_s": overall_tok_s(reports),
        "published": published(reports),
        "concurrency_curve": concurrency_curve(reports),
        "acceptance_per_position": {k: {str(p): v for p, v in d.items()} for k, d in acceptance(reports).items()},
    }
