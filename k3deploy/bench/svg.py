"""Tiny inline-SVG charts (grouped bars with reference lines, line curves) for the self-contained HTML report. Pure.

Hand-written so the HTML report needs no plotting library; the PNG uses matplotlib (the optional `bench` extra).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

PALETTE = ("#4878d0", "#ee854a", "#6acc64", "#d65f5f", "#956cb4", "#8c613c", "#dc7ec0", "#797979")
W, H, LEFT, BOTTOM, TOP = 760, 300, 60, 70, 30


def nice_step(span: float, ticks: int = 4) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving about `ticks` intervals over `span`."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def nice_ticks(top: float) -> list[float]:
    """Round tick values from 0 to the first round value at or above `top`."""
    step = nice_step(top)
    count = max(1, math.ceil(top / step - 1e-9))
    return [round(step * i, 10) for i in range(count + 1)]


def _scale(values: Sequence[float | None], refs: Sequence[float]) -> float:
    top = max([v for v in values if v is not None] + list(refs) + [1e-9])
    return (H - BOTTOM - TOP) / nice_ticks(top * 1.05)[-1]


def _yaxis(k: float, unit: str) -> str:
    """Labelled gridlines at round values from 0 to the top of the plot area."""
    top = (H - BOTTOM - TOP) / k
    suffix = "x" if unit == "x" else ""  # speedups; tok/s axes are named in the chart's heading
    out = []
    for value in nice_ticks(top):
        y = H - BOTTOM - value * k
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - 10}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text class="tick" x="{LEFT - 4}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{value:g}{suffix}</text>'
        )
    return "".join(out)


def _legend(labels: Sequence[str]) -> str:
    return "".join(
        f'<rect x="{LEFT + 130 * i}" y="6" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
        f'<text x="{LEFT + 14 + 130 * i}" y="15" font-size="11">{escape(label)}</text>'
        for i, label in enumerate(labels)
    )


def _frame(title: str, k: float, unit: str, labels: Sequence[str]) -> list[str]:
    """The opening of a chart: the svg element with its title, the y axis, the legend and the x axis line."""
    base = H - BOTTOM
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        _yaxis(k, unit),
        _legend(labels),
        f'<line x1="{LEFT}" y1="{base}" x2="{W - 10}" y2="{base}" stroke="#333"/>',
    ]


def bars(
    title: str,
    groups: Sequence[str],
    series: dict[str, Sequence[float | None]],
    refs: dict[str, float] | None = None,
    unit: str = "",
    group_refs: dict[str, tuple[str, float]] | None = None,
) -> str:
    """Grouped bars: one group per `groups` entry, one bar per series; dashed lines across the chart at `refs`
    (name: value), and dashed segments over one group only at `group_refs` (name: (group, value)), for a
    published figure that belongs to one category or tier."""
    refs = refs or {}
    group_refs = {n: gv for n, gv in (group_refs or {}).items() if gv[0] in groups}
    k = _scale([v for vs in series.values() for v in vs], list(refs.values()) + [v for _, v in group_refs.values()])
    base = H - BOTTOM
    slot = (W - LEFT - 10) / max(len(groups), 1)
    width = slot * 0.8 / max(len(series), 1)
    parts = _frame(title, k, unit, list(series))
    for g, group in enumerate(groups):
        x0 = LEFT + g * slot + slot * 0.1
        parts.append(
            f'<text x="{x0 + slot * 0.4:.1f}" y="{base + 14}" font-size="10" text-anchor="end" '
            f'transform="rotate(-30 {x0 + slot * 0.4:.1f} {base + 14})">{escape(group)}</text>'
        )
        for s, (label, values) in enumerate(series.items()):
            value = values[g] if g < len(values) else None
            if value is None:
                continue
            h = value * k
            parts.append(
                f'<rect x="{x0 + s * width:.1f}" y="{base - h:.1f}" width="{width * 0.95:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}"><title>{escape(label)} {escape(group)}: {value:.2f}{unit}</title></rect>'
            )
    for name, value in refs.items():
        y = base - value * k
        parts.append(
            f'<line class="ref" x1="{LEFT}" y1="{y:.1f}" x2="{W - 10}" y2="{y:.1f}" stroke="#000" stroke-dasharray="5,4"/>'
            f'<text x="{W - 12}" y="{y - 3:.1f}" font-size="10" text-anchor="end">{escape(name)} {value:.3g}{unit}</text>'
        )
    for n, (name, (group, value)) in enumerate(group_refs.items()):
        x0 = LEFT + groups.index(group) * slot
        y = base - value * k
        parts.append(
            f'<line class="ref" data-group="{escape(group)}" x1="{x0:.1f}" y1="{y:.1f}" x2="{x0 + slot:.1f}" '
            f'y2="{y:.1f}" stroke="#000" stroke-dasharray="5,4"/>'
            f'<text x="{x0 + slot / 2:.1f}" y="{y - 3 - 11 * n:.1f}" font-size="9" text-anchor="middle">'
            f"{escape(name)} {value:.3g}{unit}</text>"
        )
    return "".join(parts) + "</svg>"


def lines(title: str, series: dict[str, tuple[Sequence[float], Sequence[float | None]]], unit: str = "") -> str:
    """One polyline per series of (xs, ys); x positions are spread evenly by rank (concurrency levels 1, 2, 4, ...)."""
    xs = sorted({x for pts in series.values() for x in pts[0]})
    k = _scale([y for pts in series.values() for y in pts[1]], [])
    base = H - BOTTOM
    step = (W - LEFT - 40) / max(len(xs) - 1, 1)
    where = {x: LEFT + 20 + i * step for i, x in enumerate(xs)}
    parts = _frame(title, k, unit, list(series))
    parts += [f'<text x="{where[x]:.1f}" y="{base + 14}" font-size="10" text-anchor="middle">{x:g}</text>' for x in xs]
    for s, (label, (px, py)) in enumerate(series.items()):
        pts = [(where[x], base - y * k, y) for x, y in zip(px, py, strict=False) if y is not None]
        colour = PALETTE[s % len(PALETTE)]
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts)
            + '"/>'
        )
        parts += [
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>{escape(label)}: {v:.2f}{unit}</title></circle>'
            for x, y, v in pts
        ]
    return "".join(parts) + "</svg>"
