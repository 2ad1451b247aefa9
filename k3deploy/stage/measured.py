"""The MB/s a copy achieved, read back from what it left: a `stage` marker (its copy from the shared volume) or the
prefetch's sha256 record (its download into the shared volume). Pure: the caller reads the file.

What each measures: a stage from the weight volume reads it at the rate a loading tray gets (the figure the
start-up budget wants); the prefetch writes it at the Hub's rate, usually the lower, so a budget from it errs long.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from k3deploy.stage.plan import MB
from k3deploy.stage.record import marker_from_text

#: Names of each figure's origin, as `plan` and `preflight` print them.
BY_STAGE = "measured by stage"
BY_PREFETCH = "measured by the prefetch"


@dataclass(frozen=True)
class Measured:
    """A rate and where it comes from."""

    mb_s: float
    source: str


def _prefetch_rate(data: object) -> Measured | None:
    records = data if isinstance(data, list) else [data]
    total_bytes, total_s = 0, 0.0
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
            return None
        seconds = record.get("seconds")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds <= 0:
            return None
        sizes = [v.get("size") for v in record["files"].values() if isinstance(v, dict)]
        total_bytes += sum(s for s in sizes if isinstance(s, int) and s >= 0)
        total_s += float(seconds)
    if not records or total_bytes <= 0:
        return None
    return Measured(round(total_bytes / MB / total_s, 1), BY_PREFETCH)


def measured_rate(text: str) -> Measured | None:
    """The rate in a stage marker or a prefetch record (bytes over seconds, every repo together); None for any
    other text, or one that names no time (a record written before the prefetch kept its time)."""
    marker = marker_from_text(text)
    if marker is not None:
        return Measured(marker.mb_s, BY_STAGE) if marker.mb_s > 0 else None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return _prefetch_rate(data)
