"""Bench pictures: the self-contained HTML report (k3deploy.bench.html_report) and a PNG (matplotlib).

Both draw the series of `k3deploy.bench.series` in the same colours (svg.PALETTE); matplotlib is the optional
`bench` extra and is imported only for --png.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from k3deploy.bench import html_report, series
from k3deploy.bench.svg import PALETTE
from k3deploy.errors import EnvironmentProblem
from k3deploy.report.bench import BenchReport

SERIES_ID = html_report.SERIES_ID


def html(reports: Sequence[BenchReport]) -> str:
    """The HTML report of the runs."""
    return html_report.html(reports)


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


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _bar_panel(
    ax: Any,
    groups: list[str],
    values: dict[str, list[float | None]],
    ylabel: str,
    refs: dict[str, float] | None = None,
    group_refs: dict[str, tuple[str, float]] | None = None,
) -> None:
    width = 0.8 / max(len(values), 1)
    for i, (label, vs) in enumerate(values.items()):
        xs = [g + i * width for g in range(len(groups))]
        ax.bar(xs, [v or 0.0 for v in vs], width, label=label, color=_colour(i))
    for name, value in (refs or {}).items():
        ax.axhline(value, linestyle="--", color="black", linewidth=1)
        ax.text(0.99, value, f"{name}", transform=ax.get_yaxis_transform(), ha="right", va="bottom", fontsize=7)
    for name, (group, value) in (group_refs or {}).items():
        if group not in groups:
            continue
        g = groups.index(group)
        ax.hlines(value, g - width / 2, g + 0.8 - width / 2, linestyles="--", color="black", linewidth=1)
        ax.text(g + 0.4 - width / 2, value, f"{name} {value:g}", ha="center", va="bottom", fontsize=6)
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
    tiers = {ref["short"]: (ref["category"], ref["value"]) for ref in data["published"]}
    _bar_panel(
        axes[0][0], cats, {k: [d.get(c) for c in cats] for k, d in per_cat.items()}, "median decode tok/s", None, tiers
    )
    axes[0][0].set_title("tok/s per category (per request); published figures over their tier")
    if data["speedups"]:
        groups = list(dict.fromkeys(c for d in data["speedups"].values() for c in d))
        _bar_panel(
            axes[0][1],
            groups,
            {k: [d.get(g) for g in groups] for k, d in data["speedups"].items()},
            "speedup (x)",
            {"parity": 1.0},
        )
        axes[0][1].set_title(f"speedup over {reports[0].label} ({reports[0].first_point().name()})")
    else:
        axes[0][1].axis("off")
        axes[0][1].text(0.5, 0.5, "one run: no speedup", ha="center", va="center")
    ax = axes[1][0]
    curve = data["load_curve"]
    for i, (label, d) in enumerate(curve.items()):
        ax.plot(d["points"], d["per_user_tok_s"], marker="o", label=f"{label} per-user", color=_colour(2 * i))
        ax.plot(
            d["points"],
            d["output_throughput"],
            marker="s",
            linestyle="--",
            label=f"{label} output tok/s",
            color=_colour(2 * i + 1),
        )
    xs = sorted({x for d in curve.values() for x in d["points"]})
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.minorticks_off()
    ax.set_xlabel(next(iter(curve.values()))["x"].replace("_", " ") if curve else "concurrency")
    ax.set_ylabel("tok/s")
    ax.set_title("load curve")
    ax.legend(fontsize=7)
    ax = axes[1][1]
    for i, (label, d) in enumerate(data["acceptance_per_position"].items()):
        ax.plot([int(p) for p in d], list(d.values()), marker="o", label=label, color=_colour(i))
    positions = sorted({int(p) for d in data["acceptance_per_position"].values() for p in d})
    ax.set_xticks(positions)
    ax.set_xlabel("draft position (0 = first drafted token)")
    ax.set_ylabel("accepted / drafts")
    ax.set_ylim(0, 1.05)
    ax.set_title("acceptance per position" + ("" if data["acceptance_per_position"] else " (no spec-decode counters)"))
    if data["acceptance_per_position"]:
        ax.legend(fontsize=7)
    if any(r.rehearsal for r in reports):
        fig.suptitle(html_report.REHEARSAL_WARNING, color="#a06000", fontsize=9, wrap=True)
        fig.tight_layout(rect=(0, 0, 1, 0.95))
    else:
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
