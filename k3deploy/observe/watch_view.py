"""What `k3deploy watch` shows: the live table (rich) and the JSON line of each interval.

The table keeps the last good figures on screen when a scrape fails and says so in a red "scrape failed" row,
so an operator sees both the failure and what was true just before it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from k3deploy.console import safe_text
from k3deploy.kobject import JsonObject
from k3deploy.observe.watch_figures import Judged, WatchFigures, below_targets, impossible_figures, judge
from k3deploy.observe.watch_loop import Tick
from k3deploy.profile.model import TargetsSpec

BELOW_MARK = "▼ below target"
IMPOSSIBLE_MARK = "✗ impossible"


def format_value(value: float | None, unit: str) -> str:
    """A figure as the table shows it: percentages for fractions, ms under a second, '—' when unknown."""
    if value is None:
        return "—"
    if unit == "%":
        return f"{value * 100:.1f} %"
    if unit == "s":
        return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"
    if unit == "tok":
        return f"{value:.2f}"
    if unit == "tok/s":
        return f"{value:.1f}"
    return f"{value:g}"


def _target_text(row: Judged) -> str:
    return "" if row.target is None else "≥ " + format_value(row.target, row.unit)


@dataclass
class ViewState:
    """What the live view remembers between ticks."""

    source: str
    profile: str
    targets: TargetsSpec
    figures: WatchFigures | None = None
    figures_at: datetime | None = None
    error: str | None = None
    error_at: datetime | None = None
    failures: int = 0
    notes: list[str] = field(default_factory=list)
    #: The last canary run's line (watch --prometheus with observe.canary on), else None.
    canary: str | None = None

    def update(self, tick: Tick) -> None:
        """Take a tick in: new figures clear the error row, a failed scrape sets it (and keeps the figures)."""
        if tick.error is not None:
            self.error, self.error_at = tick.error.message, tick.at
            self.failures += 1
        elif tick.figures is not None:
            self.figures, self.figures_at, self.error = tick.figures, tick.at, None


def render(state: ViewState) -> RenderableType:
    """The table of figures against targets, the per-position acceptance, and the scrape-failed row."""
    when = f" · {state.figures_at:%H:%M:%S}" if state.figures_at else ""
    window = state.figures.window_s if state.figures else None
    span = f" · window {window:.1f} s" if window else ""
    table = Table(title=f"k3deploy watch · {state.profile} · {state.source}{when}{span}", title_justify="left")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("target", justify="right")
    table.add_column("")
    if state.figures is None:
        table.add_row("waiting for the second scrape", "", "", "")
    else:
        for row in judge(state.figures, state.targets):
            style = "bold red" if row.below else "yellow" if row.impossible else None
            mark = BELOW_MARK if row.below else f"{IMPOSSIBLE_MARK}: {row.impossible}" if row.impossible else ""
            table.add_row(
                row.label,
                Text(format_value(row.value, row.unit), style=style or ""),
                _target_text(row),
                Text(mark, style=style or ""),
            )
        per_pos = state.figures.per_position_acceptance
        if per_pos:
            table.add_row(
                "acceptance per position",
                "  ".join(f"{pos}: {rate * 100:.0f} %" for pos, rate in per_pos.items()),
                "",
                "",
            )
    parts: list[RenderableType] = [table]
    if state.error is not None:
        at = f"{state.error_at:%H:%M:%S}" if state.error_at else ""
        parts.append(
            Text(
                f"scrape failed {at}: {safe_text(state.error)} (figures above are from the last good scrape; retrying)",
                style="bold red",
            )
        )
    if state.figures is not None and state.figures.counter_resets:
        parts.append(
            Text(f"counter reset (server restarted?): {', '.join(state.figures.counter_resets[:3])}", style="yellow")
        )
    if state.figures is not None and state.figures.notes:
        parts.append(Text(safe_text("; ".join(state.figures.notes)), style="yellow"))
    if state.canary is not None:
        parts.append(Text(safe_text(state.canary), style="" if state.canary.endswith(" · ok") else "yellow"))
    return Group(*parts)


def json_line(tick: Tick, source: str, url: str, targets: TargetsSpec) -> str:
    """One interval as one JSON object on one line: figures, targets, which are below, which cannot be true (key:
    why), or the error."""
    doc: JsonObject = {"time": tick.at.isoformat(timespec="milliseconds"), "source": source, "url": url}
    if tick.error is not None:
        doc.update(figures=None, below=[], impossible={}, error=tick.error.message)
    else:
        figures = tick.figures
        doc.update(
            figures=figures.model_dump(mode="json") if figures else None,
            below=below_targets(figures, targets) if figures else [],
            impossible=impossible_figures(figures) if figures else {},
            error=None,
        )
    doc["targets"] = {"decode_tok_s": targets.decode_tok_s, "min_acceptance_length": targets.min_acceptance_length}
    return json.dumps(doc, separators=(",", ":"))
