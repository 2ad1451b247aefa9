"""Bench's charts, drawn by one engine, matplotlib: one function per chart draws it on an Axes; the HTML report
(k3deploy.bench.html_report) inlines each chart as SVG (matplotlib's SVG backend, its text kept as text) and the PNG
puts the four on one figure (the Agg backend).

matplotlib is the optional `bench` extra and slow to import, so this module is imported only where a chart is drawn
(bench/outputs.py, cli/bench.py; `outputs_of` checks for matplotlib before a run starts). No pyplot: each chart is a
`Figure` of its own, so nothing global is switched or left open.
"""

from __future__ import annotations

import io
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from matplotlib import rc_context
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from k3deploy.bench import html_report, series
from k3deploy.kobject import JsonObject
from k3deploy.report.bench import BenchReport

SERIES_ID = html_report.SERIES_ID
PALETTE = ("#4878d0", "#ee854a", "#6acc64", "#d65f5f", "#956cb4", "#8c613c", "#dc7ec0", "#797979")
#: An HTML chart's size in CSS pixels: the width of the report's chart column (html_report.STYLE's .pair).
CHART_PX = (760, 300)
#: Text stays text in the SVG (found, copied and read by a screen reader); ids derive from each chart's key, so
#: four inline charts never share one and the same runs give the same page.
RC: JsonObject = {
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 8,
    "axes.titlesize": 9,
}
#: No metadata block (its creator link and date): the page holds the drawing only, the same on every run.
NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}
SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"
# Written back as plain <svg> and `xlink:href`, the names an HTML parser knows (not ElementTree's ns0:/ns1:).
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

Data = JsonObject


@dataclass
class Marks:
    """What the SVG adds to matplotlib's drawing, keyed by the gid put on each artist: a tooltip, a reference line
    (and the one group it belongs to), a y-axis tick label."""

    prefix: str
    tips: dict[str, str] = field(default_factory=dict)
    refs: dict[str, str | None] = field(default_factory=dict)
    ticks: list[str] = field(default_factory=list)

    def _gid(self, artist: Artist) -> str:
        gid = f"{self.prefix}-{len(self.tips) + len(self.refs) + len(self.ticks)}"
        artist.set_gid(gid)
        return gid

    def tip(self, artist: Artist, text: str) -> None:
        """`text` shows when the pointer rests on `artist`."""
        self.tips[self._gid(artist)] = text

    def ref(self, artist: Artist, group: str | None = None) -> None:
        """`artist` is a reference line: across the chart, or over `group` only."""
        self.refs[self._gid(artist)] = group

    def tick(self, artist: Artist) -> None:
        """`artist` is a y-axis tick label."""
        self.ticks.append(self._gid(artist))


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _y_axis(ax: Axes, values: Sequence[float | None], marks: Marks, suffix: str = "") -> None:
    """The y axis from 0 to the first round value over the data, with a tick at each round step (1, 2, 2.5 or 5
    times a power of ten)."""
    top = max((v for v in values if v is not None and math.isfinite(v)), default=0.0) or 1.0
    ticks = [float(t) for t in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(0, top * 1.05)]
    ticks = [t for t in ticks if t >= 0]
    ax.set_ylim(0, ticks[-1])
    ax.set_yticks(ticks, [f"{round(t, 10):g}{suffix}" for t in ticks])
    for tick in ax.yaxis.get_major_ticks(len(ticks)):
        marks.tick(tick.label1)


def _bars(
    ax: Axes,
    groups: list[str],
    values: dict[str, list[float | None]],
    marks: Marks,
    unit: str = "",
    refs: dict[str, float] | None = None,
    group_refs: dict[str, tuple[str, float]] | None = None,
) -> None:
    """Grouped bars, one group per `groups` entry and one bar per series; dashed lines across the chart at `refs`
    (name: value) and over one group only at `group_refs` (name: (group, value)), for a published figure that
    belongs to one category or tier."""
    width = 0.8 / max(len(values), 1)
    for i, (label, vs) in enumerate(values.items()):
        xs = [g + i * width for g in range(len(groups))]
        drawn = ax.bar(xs, [v or 0.0 for v in vs], width, label=label, color=_colour(i))
        for patch, group, value in zip(drawn.patches, groups, vs, strict=False):
            if value is not None:
                marks.tip(patch, f"{label} {group}: {value:.2f}{unit}")
    for name, value in (refs or {}).items():
        marks.ref(ax.axhline(value, linestyle="--", color="black", linewidth=1))
        ax.text(0.99, value, f"{name} {value:g}{unit}", transform=ax.get_yaxis_transform(), ha="right", va="bottom")
    shown = {name: gv for name, gv in (group_refs or {}).items() if gv[0] in groups}
    for n, (name, (group, value)) in enumerate(shown.items()):
        g = groups.index(group)
        marks.ref(
            ax.hlines(value, g - width / 2, g + 0.8 - width / 2, linestyles="--", color="black", linewidth=1), group
        )
        ax.annotate(
            f"{name} {value:g}{unit}",
            (g + 0.4 - width / 2, value),
            xytext=(0, 2 + 9 * n),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=6,
        )
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups, rotation=30, ha="right")
    everything = (
        [v for vs in values.values() for v in vs] + list((refs or {}).values()) + [v for _, v in shown.values()]
    )
    _y_axis(ax, everything, marks, "x" if unit == "x" else "")
    if values:
        ax.legend(fontsize=7)


def _lines(ax: Axes, curves: dict[str, tuple[list[Any], list[float | None], str]], marks: Marks, unit: str) -> None:
    """One line per curve (xs, ys, marker); x positions spread evenly by rank (concurrency 1, 2, 4, ..., or a
    request rate, `inf` included) and labelled with their values."""
    xs = sorted({x for pts, _, _ in curves.values() for x in pts})
    where = {x: i for i, x in enumerate(xs)}
    for i, (label, (px, py, marker)) in enumerate(curves.items()):
        ys = [math.nan if y is None else y for y in py]
        (line,) = ax.plot([where[x] for x in px], ys, marker=marker, label=label, color=_colour(i))
        marks.tip(line, f"{label}: " + ", ".join(f"{x:g} -> {y:.2f}{unit}" for x, y in zip(px, ys, strict=False)))
    ax.set_xticks(range(len(xs)), [f"{x:g}" for x in xs])
    _y_axis(ax, [y for _, py, _ in curves.values() for y in py], marks)
    if curves:
        ax.legend(fontsize=7)


def per_category(ax: Axes, reports: Sequence[BenchReport], data: Data, marks: Marks) -> None:
    """Median decode tok/s per category for each run, each published figure over the tier it was measured on."""
    per_cat = data["per_category"]
    groups = list(dict.fromkeys(c for d in per_cat.values() for c in d))
    tiers = {ref["short"]: (ref["category"], ref["value"]) for ref in data["published"]}
    values = {k: [d.get(c) for c in groups] for k, d in per_cat.items()}
    _bars(ax, groups, values, marks, " tok/s", group_refs=tiers)
    ax.set_ylabel("median decode tok/s")
    ax.set_title("tok/s per category (per request); published figures over their tier")


def speedup(ax: Axes, reports: Sequence[BenchReport], data: Data, marks: Marks) -> None:
    """Each run's speedup over the first, per category and overall, with the 1.0x line."""
    sp = data["speedups"]
    if not sp:
        ax.axis("off")
        ax.text(0.5, 0.5, "one run: no speedup", ha="center", va="center")
        return
    groups = list(dict.fromkeys(g for d in sp.values() for g in d))
    _bars(ax, groups, {k: [d.get(g) for g in groups] for k, d in sp.items()}, marks, "x", refs={"parity": 1.0})
    ax.set_ylabel("speedup (x)")
    ax.set_title(f"speedup over {reports[0].label} ({reports[0].first_point().name()})")


def load_curve(ax: Axes, reports: Sequence[BenchReport], data: Data, marks: Marks) -> None:
    """Per-user (median decode) tok/s and output throughput per load point, per run."""
    curve = data["load_curve"]
    lines: dict[str, tuple[list[Any], list[float | None], str]] = {}
    for label, d in curve.items():
        lines[f"{label} per-user"] = (d["points"], d["per_user_tok_s"], "o")
        lines[f"{label} output tok/s"] = (d["points"], d["output_throughput"], "s")
    _lines(ax, lines, marks, " tok/s")
    ax.set_xlabel(next(iter(curve.values()))["x"].replace("_", " ") if curve else "concurrency")
    ax.set_ylabel("tok/s")
    ax.set_title("load curve")


def acceptance(ax: Axes, reports: Sequence[BenchReport], data: Data, marks: Marks) -> None:
    """Accepted / drafts per draft position, per run that speculates."""
    acc = data["acceptance_per_position"]
    _lines(ax, {k: ([int(p) for p in d], list(d.values()), "o") for k, d in acc.items()}, marks, "")
    ax.set_xlabel("draft position (0 = first drafted token)")
    ax.set_ylabel("accepted / drafts")
    ax.set_title("acceptance per position" + ("" if acc else " (no spec-decode counters)"))


Draw = Callable[[Axes, Sequence[BenchReport], Data, Marks], None]
#: The charts in page order: key, title (the SVG's accessible name), how to draw it, and whether the runs give it
#: data (the PNG draws every panel, saying so where one has none; the HTML leaves such a chart out).
CHARTS: tuple[tuple[str, str, Draw, Callable[[Data], bool]], ...] = (
    ("per_category", "tok/s per category", per_category, lambda d: True),
    ("speedup", "speedup", speedup, lambda d: bool(d["speedups"])),
    ("load_curve", "load curve", load_curve, lambda d: True),
    ("acceptance", "acceptance per position", acceptance, lambda d: bool(d["acceptance_per_position"])),
)


def _ids_referenced(root: ET.Element) -> set[str]:
    refs = set()
    for el in root.iter():
        for value in el.attrib.values():
            if value.startswith("#"):
                refs.add(value[1:])
            elif value.startswith("url(#"):
                refs.add(value[5:].rstrip(")"))
    return refs


def _inline(svg: str, title: str, marks: Marks) -> str:
    """matplotlib's SVG document as an element for the page: its accessible name and title first, tooltips,
    `class="ref"` (and `data-group`) on reference lines, `class="tick"` on y tick labels; no XML prolog, no
    metadata, no id nothing refers to."""
    root = ET.fromstring(svg)
    q = f"{{{SVG_NS}}}"
    for meta in root.findall(f"{q}metadata"):
        root.remove(meta)
    root.set("role", "img")
    root.set("aria-label", title)
    heading = ET.Element(f"{q}title")
    heading.text = title
    root.insert(0, heading)
    groups = {g.get("id"): g for g in root.iter(f"{q}g")}
    for gid, text in marks.tips.items():
        tip = ET.SubElement(groups[gid], f"{q}title")
        tip.text = text
    for gid, group in marks.refs.items():
        groups[gid].set("class", "ref")
        if group is not None:
            groups[gid].set("data-group", group)
    for gid in marks.ticks:
        for text_el in groups[gid].iter(f"{q}text"):
            text_el.set("class", "tick")
    keep = _ids_referenced(root)
    for el in root.iter():
        if el.get("id") is not None and el.get("id") not in keep:
            del el.attrib["id"]
    return ET.tostring(root, encoding="unicode")


def svg(key: str, reports: Sequence[BenchReport], data: Data | None = None) -> str:
    """One chart as an inline SVG element, CHART_PX in size."""
    data = series.all_series(reports) if data is None else data
    _, title, draw, _ = next(c for c in CHARTS if c[0] == key)
    marks = Marks(f"k3-{key}")
    with rc_context({**RC, "svg.hashsalt": f"k3deploy-{key}"}):
        fig = Figure(figsize=(CHART_PX[0] / 96, CHART_PX[1] / 96))  # SVG sizes are points: 72 per inch, 96 px
        draw(fig.add_subplot(), reports, data, marks)
        fig.tight_layout()
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata=NO_METADATA)
    return _inline(out.getvalue(), title, marks)


def svgs(reports: Sequence[BenchReport], data: Data | None = None) -> dict[str, str]:
    """Every chart the runs give data for, by key, in page order."""
    data = series.all_series(reports) if data is None else data
    return {key: svg(key, reports, data) for key, _, _, present in CHARTS if present(data)}


def html(reports: Sequence[BenchReport]) -> str:
    """The HTML report of the runs, its charts drawn here."""
    data = series.all_series(reports)
    return html_report.html(reports, svgs(reports, data))


def figure(reports: Sequence[BenchReport]) -> Figure:
    """The four charts as the panels of one figure (the PNG)."""
    data = series.all_series(reports)
    with rc_context(RC):
        fig = Figure(figsize=(13, 9))
        axes = fig.subplots(2, 2).flatten()
        for ax, (key, _, draw, _) in zip(axes, CHARTS, strict=True):
            draw(ax, reports, data, Marks(f"k3-{key}"))
        if any(r.rehearsal for r in reports):
            fig.suptitle(html_report.REHEARSAL_WARNING, color="#a06000", fontsize=9, wrap=True)
            fig.tight_layout(rect=(0, 0, 1, 0.95))
        else:
            fig.tight_layout()
    return fig


def png(reports: Sequence[BenchReport]) -> bytes:
    """`figure(reports)` as PNG bytes (fileio/write.py writes them: temporary file, rename)."""
    buffer = io.BytesIO()
    with rc_context(RC):
        figure(reports).savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
