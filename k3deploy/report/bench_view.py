"""Rich tables of a bench report and of a comparison (printed on stderr; data goes to stdout only with -o json)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text

from k3deploy.report.bench import BenchReport, CellFigures
from k3deploy.report.smoke import Stats

if TYPE_CHECKING:
    from k3deploy.bench.compare import Comparison


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _dist(s: Stats, digits: int = 1) -> str:
    if not s.count or s.median is None:
        return "-"
    return f"{s.median:,.{digits}f} ({s.p10:,.{digits}f}..{s.p90:,.{digits}f})"


def _spec(cell: CellFigures) -> tuple[str, str, str]:
    spec = cell.server.spec_decode if cell.server is not None else None
    if spec is None:
        return "-", "-", "-"
    positions = " ".join(f"{rate:.2f}" for _, rate in sorted(spec.per_position_rates.items()))
    return _num(spec.acceptance_rate, 3), _num(spec.mean_acceptance_length, 2), positions or "-"


def _tokens(cell: CellFigures) -> str:
    server = cell.server.generation_tokens if cell.server is not None and cell.server.available else None
    return f"{cell.completion_tokens}" + ("" if server is None else f" / {server:g}")


def _table(title: str | None, *headers: str) -> Table:
    table = Table(box=None, title=title, title_justify="left")
    table.add_column(headers[0], no_wrap=True, min_width=12)
    for header in headers[1:]:
        table.add_column(header)
    return table


def _cells(report: BenchReport, level: int) -> list[CellFigures]:
    return [c for c in report.cells if c.concurrency == level] + [c for c in report.overall if c.concurrency == level]


def figures_table(report: BenchReport, level: int) -> Table:
    """Throughput at one concurrency level: one row per category, then overall."""
    table = _table(
        f"{report.label}: {report.settings.dataset}, concurrency {level}, {report.settings.output_tokens} "
        f"output tokens, temperature {report.settings.temperature:g}",
        "CATEGORY",
        "REQ",
        "FAIL",
        "TOKENS client/server",
        "DECODE TOK/S med (p10..p90)",
        "E2E TOK/S",
        "AGG TOK/S",
    )
    for cell in _cells(report, level):
        table.add_row(
            cell.category,
            str(cell.requests),
            str(cell.failed),
            _tokens(cell),
            _dist(cell.decode_tok_s),
            _num(cell.e2e_tok_s.median),
            _num(cell.aggregate_tok_s),
            style="bold" if cell.category == "overall" else None,
        )
    return table


def latency_table(report: BenchReport, level: int) -> Table:
    """Latency and speculative-decoding figures at one concurrency level (medians; the report has p10/p90)."""
    table = _table(None, "CATEGORY", "TTFT MS", "TPOT MS", "ACCEPT RATE", "ACCEPT LEN", "PER POSITION", "TOK/CHUNK")
    for cell in _cells(report, level):
        rate, length, positions = _spec(cell)
        table.add_row(
            cell.category,
            _num(cell.ttft_ms.median),
            _num(cell.tpot_ms.median, 2),
            rate,
            length,
            positions,
            _num(cell.tokens_per_chunk.mean, 2),
            style="bold" if cell.category == "overall" else None,
        )
    return table


def bench_view(report: BenchReport) -> Group:
    """Every concurrency level's table, then the warnings."""
    parts: list[Table | Text] = [
        t for level in report.settings.concurrency for t in (figures_table(report, level), latency_table(report, level))
    ]
    parts += [Text(f"warning: {w}", style="yellow") for w in report.warnings]
    return Group(*parts)


def compare_view(comparison: Comparison) -> Group:
    """Median decode tok/s of each run and its speedup over the first, beside the published references."""
    labels = comparison.labels
    table = _table(
        "median decode tok/s per request, speedup over " + labels[0],
        "CATEGORY",
        "CONC",
        *[f"{label} TOK/S" for label in labels],
        *[f"{label} SPEEDUP" for label in labels[1:]],
        *[f"{label} ACCEPT LEN" for label in labels],
    )
    for row in comparison.rows:
        table.add_row(
            row.category,
            str(row.concurrency),
            *[_num(v) for v in row.decode_tok_s],
            *[("-" if s is None else f"{s:.2f}x") for s in row.speedup[1:]],
            *[_num(v, 2) for v in row.mean_acceptance_length],
            style="bold" if row.category == "overall" else None,
        )
    refs = comparison.references
    published = Text(
        "published (TP16 GB300, bs=1): "
        + ", ".join(
            part
            for part in (
                f"{refs.baseline_decode_tok_s:g} tok/s without speculation" if refs.baseline_decode_tok_s else "",
                f"{refs.decode_tok_s:g} tok/s with DSpark on SPEED-Bench" if refs.decode_tok_s else "",
                f"{refs.speedup:.2f}x speedup" if refs.speedup else "",
                f"{refs.peak_decode_tok_s:g} tok/s peak (low-entropy, separate benchmark)"
                if refs.peak_decode_tok_s
                else "",
            )
            if part
        )
        if refs.decode_tok_s or refs.baseline_decode_tok_s
        else "published: the profile names no reference figures"
    )
    return Group(table, published)
