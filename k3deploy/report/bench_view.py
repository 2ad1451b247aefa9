"""Rich tables of a bench report and of a comparison (printed on stderr; data goes to stdout only with -o json)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from k3deploy.report.bench import BenchReport, CellFigures, Comparison, Dist, Point, SpeedupRow
from k3deploy.report.smoke import Stats


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


def _at(cell: CellFigures, point: Point) -> bool:
    return cell.concurrency == point.concurrency and cell.request_rate == point.request_rate


def _cells(report: BenchReport, point: Point) -> list[CellFigures]:
    return [c for c in report.cells if _at(c, point)] + [c for c in report.overall if _at(c, point)]


def _points(report: BenchReport) -> list[Point]:
    return report.points or [Point(concurrency=level) for level in report.settings.concurrency]


def figures_table(report: BenchReport, point: Point) -> Table:
    """Throughput at one load point: one row per category, then overall."""
    table = _table(
        f"{report.label}: {report.settings.dataset}, {point.name()}, {report.settings.output_tokens} "
        f"output tokens, temperature {report.settings.temperature:g}",
        "CATEGORY",
        "REQ",
        "FAIL",
        "TOKENS client/server",
        "DECODE TOK/S excl. TTFT med (p10..p90)",
        "SPREAD",
        "REQ/S",
        "OUTPUT TOK/S incl. TTFT",
        "TOTAL TOK/S",
        *(["GOODPUT REQ/S"] if report.settings.goodput_slo_ms else []),
    )
    for cell in _cells(report, point):
        t = cell.throughput
        table.add_row(
            cell.category,
            str(cell.requests),
            str(cell.failed),
            _tokens(cell),
            _dist(cell.decode_tok_s),
            "-" if cell.spread is None else f"{100 * cell.spread:.0f} %",
            _num(t.request_throughput, 2),
            _num(cell.output_tok_s if cell.output_tok_s is not None else t.output_throughput),
            _num(t.total_token_throughput),
            *([_num(t.request_goodput, 2)] if report.settings.goodput_slo_ms else []),
            style="bold" if cell.category == "overall" else None,
        )
    return table


def latency_table(report: BenchReport, point: Point) -> Table:
    """vLLM-defined latencies per category at one load point: p50 and p99 in ms (the detail table has the rest)."""
    heads = [f"{m} {q}" for m in ("TTFT", "TPOT", "ITL", "E2E") for q in ("p50", "p99")]
    table = _table("latency, ms (as vllm bench serve)", "CATEGORY", *heads, "TOK/CHUNK")
    for cell in _cells(report, point):
        table.add_row(
            cell.category,
            *(_num(d.at(q), 2) for d in _four(cell).values() for q in (50, 99)),
            _num(cell.tokens_per_chunk.mean, 2),
            style="bold" if cell.category == "overall" else None,
        )
    return table


def _four(cell: CellFigures) -> dict[str, Dist]:
    return {"TTFT": cell.ttft_ms, "TPOT": cell.tpot_ms, "ITL": cell.itl_ms, "E2E": cell.e2el_ms}


def detail_table(report: BenchReport, point: Point) -> Table | None:
    """All categories together at one load point: mean, std and every percentile of each latency, in ms."""
    cell = report.cell("overall", point.concurrency, point.request_rate)
    if cell is None:
        return None
    qs = report.settings.percentiles
    table = _table(f"overall @ {point.name()}, ms", "METRIC", "MEAN", "STD", *(f"p{q:g}" for q in qs))
    for name, d in _four(cell).items():
        table.add_row(name, _num(d.mean, 2), _num(d.std, 2), *(_num(d.at(q), 2) for q in qs))
    return table


def spec_table(report: BenchReport, point: Point) -> Table | None:
    """Acceptance per cell at one load point (None when the server reported no spec-decode counters)."""
    rows = [(c, _spec(c)) for c in _cells(report, point)]
    if all(spec == ("-", "-", "-") for _, spec in rows):
        return None
    table = _table(None, "CATEGORY", "ACCEPT RATE", "ACCEPT LEN", "PER POSITION")
    for cell, (rate, length, positions) in rows:
        table.add_row(cell.category, rate, length, positions, style="bold" if cell.category == "overall" else None)
    return table


def bench_view(report: BenchReport) -> Group:
    """Every load point's tables, then the host-load note and the warnings."""
    parts: list[Table | Text] = []
    for point in _points(report):
        parts += [figures_table(report, point), latency_table(report, point)]
        parts += [t for t in (detail_table(report, point), spec_table(report, point)) if t is not None]
    if report.host is not None and report.host.overloaded():
        parts.append(Text(host_note(report), style="yellow"))
    parts += [Text(f"warning: {w}", style="yellow") for w in report.warnings]
    return Group(*parts)


def host_note(report: BenchReport) -> str:
    """One line on the client host's load during the run."""
    host = report.host
    if host is None:
        return ""
    return (
        f"note: host load {host.load_start} -> {host.load_end} on {host.cpus} CPU(s): "
        "timings measure the host as much as the server"
    )


def _speedup(row: SpeedupRow, i: int) -> str:
    mid = row.speedup[i]
    if mid is None:
        return "-"
    low, high = row.speedup_low[i] if row.speedup_low else None, row.speedup_high[i] if row.speedup_high else None
    if row.samples and row.samples[i] > 1 and low is not None and high is not None:
        return f"{mid:.2f}x ({low:.2f}..{high:.2f})"
    return f"{mid:.2f}x"


def compare_view(comparison: Comparison) -> Group:
    """Median decode tok/s of each run and its speedup over the first, beside the published references."""
    labels = comparison.labels
    table = _table(
        "median decode tok/s per request (TTFT excluded), speedup over "
        + labels[0]
        + "; output tok/s (TTFT included, as vllm bench serve)",
        "CATEGORY",
        "LOAD",
        *[f"{label} DECODE TOK/S" for label in labels],
        *[f"{label} OUTPUT TOK/S" for label in labels],
        *[f"{label} SPEEDUP" for label in labels[1:]],
        *[f"{label} ACCEPT LEN" for label in labels],
    )
    for row in comparison.rows:
        table.add_row(
            row.category,
            str(row.concurrency) if row.request_rate is None else f"{row.request_rate:g}/s",
            *[_num(v) for v in row.decode_tok_s],
            *[_num(v) for v in (row.output_tok_s or [None] * len(labels))],
            *[_speedup(row, i) for i in range(1, len(labels))],
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
