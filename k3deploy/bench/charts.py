"""Bench pictures: a self-contained HTML report (inline SVG, the series as embedded JSON) and a PNG (matplotlib).

Both draw the four series of `k3deploy.bench.series`; matplotlib is the optional `bench` extra and is imported
only for --png.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from k3deploy.bench import series, svg
from k3deploy.errors import EnvironmentProblem
from k3deploy.report.bench import FORMULAS, BenchReport

SERIES_ID = "k3deploy-bench-series"


def _published_refs(pub: dict[str, float | None]) -> dict[str, float]:
    names = {
        "baseline_decode_tok_s": "published without speculation",
        "decode_tok_s": "published with DSpark",
        "peak_decode_tok_s": "published peak",
    }
    return {names[k]: v for k, v in pub.items() if k in names and v}


def _sections(reports: Sequence[BenchReport], data: dict[str, Any]) -> list[tuple[str, str]]:
    per_cat = data["per_category"]
    categories = list(dict.fromkeys(c for d in per_cat.values() for c in d))
    out = [
        (
            "Median decode tok/s per category (per request)",
            svg.bars(
                "tok/s per category",
                categories,
                {label: [d.get(c) for c in categories] for label, d in per_cat.items()},
                unit=" tok/s",
            ),
        )
    ]
    pub = data["published"]
    if data["speedups"]:
        groups = list(dict.fromkeys(c for d in data["speedups"].values() for c in d))
        refs = {"published speedup": pub["speedup"]} if pub.get("speedup") else {}
        out.append(
            (
                f"Speedup over {reports[0].label}",
                svg.bars(
                    "speedup",
                    groups,
                    {label: [d.get(g) for g in groups] for label, d in data["speedups"].items()},
                    refs,
                    unit="x",
                ),
            )
        )
    else:
        overall = data["overall_tok_s"]
        out.append(
            (
                "Overall median decode tok/s against the published figures",
                svg.bars(
                    "tok/s vs published",
                    ["overall"],
                    {label: [v] for label, v in overall.items()},
                    _published_refs(pub),
                    unit=" tok/s",
                ),
            )
        )
    curve = data["concurrency_curve"]
    out.append(
        (
            "Concurrency curve: per-user (median decode) and aggregate tok/s",
            svg.lines(
                "concurrency curve",
                {
                    **{f"{label} per-user": (d["concurrency"], d["per_user_tok_s"]) for label, d in curve.items()},
                    **{f"{label} aggregate": (d["concurrency"], d["aggregate_tok_s"]) for label, d in curve.items()},
                },
                unit=" tok/s",
            ),
        )
    )
    acc = data["acceptance_per_position"]
    if acc:
        positions = sorted({int(p) for d in acc.values() for p in d})
        out.append(
            (
                "Acceptance per draft position (accepted / drafts)",
                svg.bars(
                    "acceptance per position",
                    [str(p) for p in positions],
                    {label: [d.get(str(p)) for p in positions] for label, d in acc.items()},
                ),
            )
        )
    return out


def html(reports: Sequence[BenchReport]) -> str:
    """The report as one HTML page: charts, each run's settings, the formulas, and the series as JSON."""
    data = series.all_series(reports)
    runs = "".join(
        f"<tr><td>{escape(r.label)}</td><td>{escape(r.settings.dataset)}</td><td>{r.settings.output_tokens}</td>"
        f"<td>{r.settings.temperature:g}</td><td>{escape(json.dumps(r.speculative))}</td><td>{escape(r.endpoint)}</td></tr>"
        for r in reports
    )
    charts = "".join(f"<h2>{escape(title)}</h2>{body}" for title, body in _sections(reports, data))
    formulas = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in FORMULAS.items())
    blob = json.dumps(data).replace("</", "<\\/")
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>k3deploy bench</title>'
        "<style>body{font-family:sans-serif;margin:2em;max-width:900px}td,th{padding:2px 8px;text-align:left}</style>"
        "</head><body><h1>k3deploy bench</h1><table><tr><th>run</th><th>dataset</th><th>output tokens</th>"
        f"<th>temperature</th><th>speculative</th><th>endpoint</th></tr>{runs}</table>{charts}"
        f"<h2>Formulas</h2><dl>{formulas}</dl>"
        f'<script type="application/json" id="{SERIES_ID}">{blob}</script></body></html>\n'
    )


def write_html(reports: Sequence[BenchReport], path: Path) -> None:
    """Write `html(reports)` to `path`."""
    path.write_text(html(reports), encoding="utf-8")


def _pyplot() -> Any:
    try:
        # matplotlib is the optional 'bench' extra and slow to import: only --png loads it.
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # after use("Agg"): the backend is chosen before pyplot loads
    except ImportError:
        raise EnvironmentProblem(
            "--png needs matplotlib, which is not installed",
            hint="pip install 'k3deploy[bench]' (or drop --png; --html needs nothing)",
        ) from None
    return plt


def _bar_panel(
    ax: Any, groups: list[str], values: dict[str, list[float | None]], refs: dict[str, float], ylabel: str
) -> None:
    width = 0.8 / max(len(values), 1)
    for i, (label, vs) in enumerate(values.items()):
        xs = [g + i * width for g in range(len(groups))]
        ax.bar(xs, [v or 0.0 for v in vs], width, label=label)
    for name, value in refs.items():
        ax.axhline(value, linestyle="--", color="black", linewidth=1)
        ax.text(
            0.99, value, f"{name} {value:.3g}", transform=ax.get_yaxis_transform(), ha="right", va="bottom", fontsize=7
        )
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def figure(reports: Sequence[BenchReport]) -> Any:
    """The four-panel matplotlib figure of the series."""
    plt = _pyplot()
    data = series.all_series(reports)
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    per_cat = data["per_category"]
    cats = list(dict.fromkeys(c for d in per_cat.values() for c in d))
    _bar_panel(axes[0][0], cats, {k: [d.get(c) for c in cats] for k, d in per_cat.items()}, {}, "median decode tok/s")
    axes[0][0].set_title("tok/s per category (per request)")
    pub = data["published"]
    if data["speedups"]:
        groups = list(dict.fromkeys(c for d in data["speedups"].values() for c in d))
        _bar_panel(
            axes[0][1],
            groups,
            {k: [d.get(g) for g in groups] for k, d in data["speedups"].items()},
            {"published": pub["speedup"]} if pub.get("speedup") else {},
            "speedup (x)",
        )
        axes[0][1].set_title(
            f"speedup over {reports[0].label} (concurrency {min(reports[0].settings.concurrency)})"
            + (" vs published" if pub.get("speedup") else "")
        )
    else:
        _bar_panel(
            axes[0][1], ["overall"], {k: [v] for k, v in data["overall_tok_s"].items()}, _published_refs(pub), "tok/s"
        )
        axes[0][1].set_title("overall tok/s vs published figures")
    ax = axes[1][0]
    for label, d in data["concurrency_curve"].items():
        ax.plot(d["concurrency"], d["per_user_tok_s"], marker="o", label=f"{label} per-user")
        ax.plot(d["concurrency"], d["aggregate_tok_s"], marker="s", linestyle="--", label=f"{label} aggregate")
    levels = sorted({x for d in data["concurrency_curve"].values() for x in d["concurrency"]})
    ax.set_xscale("log", base=2)
    ax.set_xticks(levels, [str(x) for x in levels])
    ax.minorticks_off()
    ax.set_xlabel("concurrency")
    ax.set_ylabel("tok/s")
    ax.set_title("concurrency curve")
    ax.legend(fontsize=7)
    ax = axes[1][1]
    for label, d in data["acceptance_per_position"].items():
        ax.plot([int(p) for p in d], list(d.values()), marker="o", label=label)
    positions = sorted({int(p) for d in data["acceptance_per_position"].values() for p in d})
    ax.set_xticks(positions)
    ax.set_xlabel("draft position (0 = first drafted token)")
    ax.set_ylabel("accepted / drafts")
    ax.set_ylim(0, 1.05)
    ax.set_title("acceptance per position" + ("" if data["acceptance_per_position"] else " (no spec-decode counters)"))
    if data["acceptance_per_position"]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def png(reports: Sequence[BenchReport]) -> bytes:
    """`figure(reports)` as PNG bytes (fileio/write.py writes them: temporary file, rename)."""
    fig = figure(reports)
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=100)
    finally:
        _pyplot().close(fig)
    return buffer.getvalue()


def write_png(reports: Sequence[BenchReport], path: Path) -> None:
    """Draw `figure(reports)` into a PNG file."""
    path.write_bytes(png(reports))
