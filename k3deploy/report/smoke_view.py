"""Rich tables of a smoke report: the checks, then the bs=1 figures per tier and the concurrency sweep."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from k3deploy.console import safe_text
from k3deploy.report.model import Status
from k3deploy.report.smoke import SmokeReport, Stats

_STYLE = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.SKIP: "dim"}


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value.is_integer():
            return f"{value:,.0f}"
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value)


def _dist(s: Stats, scale: float = 1.0) -> str:
    if not s.count or s.median is None:
        return "-"
    return f"{s.median * scale:,.2f} ({s.p10 * scale:,.2f}..{s.p90 * scale:,.2f})"  # type: ignore[operator]


def checks_table(report: SmokeReport) -> Table:
    """One row per check, in run order."""
    table = Table(
        "CHECK",
        "STATUS",
        "MEASURED",
        "TARGET",
        "DETAIL",
        box=None,
        title=f"smoke: {report.profile} @ {report.endpoint}",
        title_justify="left",
    )
    for check in report.checks:
        status = f"[{_STYLE[check.status]}]{check.status.value.upper()}[/]"
        detail = check.detail + (f"\nhint: {check.hint}" if check.hint and check.status is Status.FAIL else "")
        table.add_row(check.name, status, _fmt(check.measured), _fmt(check.target), Text(safe_text(detail)))
    return table


def figures_table(report: SmokeReport) -> Table | None:
    """Median (p10..p90) per tier and overall; None when nothing was measured."""
    if report.summary is None or not report.summary.overall.requests:
        return None
    table = Table(
        "TIER",
        "REQUESTS",
        "FAILED",
        "TOKENS",
        "DECODE TOK/S",
        "TTFT MS",
        "TPOT MS",
        "TOKENS/CHUNK",
        box=None,
        title="bs=1 figures: median (p10..p90)",
        title_justify="left",
    )
    rows = [*report.summary.tiers.items(), ("overall", report.summary.overall)]
    for name, tier in rows:
        table.add_row(
            name,
            str(tier.requests),
            str(tier.failed),
            str(tier.completion_tokens),
            _dist(tier.decode_tok_s),
            _dist(tier.ttft_s, 1000.0),
            _dist(tier.tpot_ms),
            _dist(tier.tokens_per_chunk),
        )
    return table


def sweep_table(report: SmokeReport) -> Table | None:
    """Aggregate tok/s per concurrency level; None without a sweep."""
    if report.summary is None or not report.summary.sweep:
        return None
    table = Table(
        "CONCURRENCY",
        "REQUESTS",
        "FAILED",
        "TOKENS",
        "WINDOW S",
        "AGGREGATE TOK/S",
        "MEDIAN DECODE TOK/S",
        box=None,
        title="concurrency sweep",
        title_justify="left",
    )
    for p in report.summary.sweep:
        table.add_row(
            str(p.concurrency),
            str(p.requests),
            str(p.failed),
            str(p.completion_tokens),
            _fmt(p.window_s),
            _fmt(p.aggregate_tok_s),
            _fmt(p.median_decode_tok_s),
        )
    return table


def smoke_view(report: SmokeReport) -> Group:
    """Everything a person reads after a run."""
    parts: list[Table | Text] = [checks_table(report)]
    parts += [t for t in (figures_table(report), sweep_table(report)) if t is not None]
    parts.append(Text(f"cross-node all-reduce backend (leader log): {report.allreduce_backend}"))
    return Group(*parts)
