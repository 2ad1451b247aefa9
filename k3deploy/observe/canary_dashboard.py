"""The Grafana dashboard's canary row (observe.canary): the canary's decode tok/s over time against the decode
target and the no-speculation baseline, output tok/s beside it, acceptance per category, TTFT, and the age of the
last successful run. Pure; dashboard.py lays the row out like its others."""

from __future__ import annotations

from k3deploy.observe import canary_series as series
from k3deploy.observe.dashboard_model import PanelSpec, Threshold
from k3deploy.profile.model import Profile

ROW_TITLE = "Performance canary"


def _selector(profile: Profile) -> str:
    return f'{{job="{series.JOB}",release="{profile.name}"}}'


def canary_panels(profile: Profile) -> list[tuple[PanelSpec, Threshold | None]]:
    """The row's panels and their target lines; empty when the canary is off."""
    if not profile.observe.canary.enabled:
        return []
    sel, targets = _selector(profile), profile.targets
    speed = [
        ("group {{group}} decode tok/s (TTFT excluded)", f"{series.DECODE}{sel}"),
        ("group {{group}} output tok/s (TTFT included)", f"{series.OUTPUT}{sel}"),
    ]
    if targets.decode_tok_s is not None:
        speed.append((f"target {targets.decode_tok_s:g}", f"vector({targets.decode_tok_s:g})"))
    if targets.baseline_decode_tok_s is not None:
        speed.append(
            (
                f"baseline {targets.baseline_decode_tok_s:g} (no speculation)",
                f"vector({targets.baseline_decode_tok_s:g})",
            )
        )
    decode_line = None if targets.decode_tok_s is None else Threshold(targets.decode_tok_s, below_is_bad=True)
    floor = targets.min_acceptance_length
    return [
        (
            PanelSpec("canary_decode", "Canary decode tok/s vs target and baseline", "short", lambda _s, _w: speed),
            decode_line,
        ),
        (
            PanelSpec(
                "canary_acceptance",
                "Canary acceptance length per category",
                "short",
                lambda _s, _w: [("{{category}} (group {{group}})", f"{series.ACCEPTANCE}{sel}")],
            ),
            None if floor is None else Threshold(floor, below_is_bad=True),
        ),
        (
            PanelSpec(
                "canary_health",
                "Canary TTFT and time since its last success",
                "s",
                lambda _s, _w: [
                    ("TTFT group {{group}}", f"{series.TTFT}{sel}"),
                    ("since last success group {{group}}", f"time() - {series.LAST_SUCCESS}{sel}"),
                ],
            ),
            None,
        ),
    ]
