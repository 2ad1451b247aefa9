"""The plan's KV tokens beside those the local server logged at start-up (`up`'s wait detail)."""

from __future__ import annotations

from pathlib import Path

from k3deploy.profile.model import Profile
from k3deploy.profile.plan import plan
from k3deploy.profile.plan_check import capacity_line, reported_kv_tokens

#: How much of the server log's end is searched for its start-up KV capacity line.
_LOG_TAIL_BYTES = 8 * 1024 * 1024


def kv_capacity(profile: Profile, log: Path) -> str:
    """The plan's KV tokens beside those the server logged at start-up (read from the end of its log)."""
    text = ""
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - _LOG_TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        pass
    return capacity_line(plan(profile).kv_tokens_per_gpu, reported_kv_tokens(text))
