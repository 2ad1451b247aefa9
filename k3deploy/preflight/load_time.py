"""How long a group takes to read its weights: from the shared weight volume, and from a tray's local disk once
`k3deploy stage` has copied them there. Pure.

A tray holds (and a load reads) one whole snapshot, target and draft: every rank reads its slices of every shard,
so each tray's copy is the whole checkpoint. The rates are the profile's figures (`storage.read_mb_s`, the one the
start-up budget uses too, and `hardware.local_disk_read_mb_s`), or a rate `k3deploy stage` or the prefetch measured.
"""

from __future__ import annotations

from pydantic import BaseModel

from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult, Status, judged
from k3deploy.stage.measured import Measured

#: MB as the rates count it (10^6 bytes).
MB = 1_000_000


class LoadTime(BaseModel):
    """Bytes per tray and the seconds to read them at each rate (None where the rate is not known)."""

    bytes_per_tray: int
    shared_mb_s: float | None
    shared_source: str
    local_mb_s: float | None
    local_source: str
    shared_s: float | None
    local_s: float | None


def _seconds(nbytes: int, mb_s: float | None) -> float | None:
    return round(nbytes / (mb_s * MB), 1) if mb_s else None


def load_time(profile: Profile, measured: Measured | None = None) -> LoadTime | None:
    """The load times of a kubernetes profile; None for the local target (no shared volume, no trays).

    `measured`: a rate `stage` (or the prefetch) achieved on the shared volume, used over storage.read_mb_s.
    """
    if not profile.on_kubernetes:
        return None
    snapshot = profile.model.checkpoint_bytes + (profile.speculative.draft_bytes if profile.speculative else 0)
    shared = measured.mb_s if measured is not None else profile.storage.read_mb_s
    local = profile.hardware.local_disk_read_mb_s if profile.hardware else None
    return LoadTime(
        bytes_per_tray=snapshot,
        shared_mb_s=shared,
        shared_source=measured.source if measured is not None else "storage.read_mb_s",
        local_mb_s=local,
        local_source="hardware.local_disk_read_mb_s" if local else "not set",
        shared_s=_seconds(snapshot, shared),
        local_s=_seconds(snapshot, local),
    )


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:,.1f} min"


def load_note(result: LoadTime) -> str:
    """One sentence for `plan`: each tray's bytes and the time to read them from each place."""
    parts = [
        f"from the shared volume {_minutes(result.shared_s)} at {result.shared_mb_s or '-'} MB/s "
        f"({result.shared_source})",
        f"from local disk {_minutes(result.local_s)} at {result.local_mb_s or '-'} MB/s ({result.local_source})",
    ]
    return f"weight load: {result.bytes_per_tray / 1e9:,.0f} GB per tray; " + "; ".join(parts)


def measured_budget_check(profile: Profile, measured: Measured) -> CheckResult:
    """storage.load_time: the rendered start-up budget against the one the measured rate gives. WARN when the
    measured load would outlast the pods' budget (the startup probe would kill a group still loading)."""
    rendered = profile.startup_budget
    at_measured = rendered.measured(measured.mb_s, measured.source)
    loading = load_time(profile, measured)
    detail = load_note(loading) if loading is not None else ""
    return judged(
        "storage.load_time",
        at_measured.total_s <= rendered.total_s,
        f"{at_measured.total_s:,} s at {measured.mb_s:g} MB/s ({measured.source})",
        f"<= {rendered.total_s:,} s (the pods' start-up budget)",
        detail,
        hint=f"render with --set storage.read_mb_s={measured.mb_s:g}: the budget then covers the measured load",
        bad=Status.WARN,
    )
