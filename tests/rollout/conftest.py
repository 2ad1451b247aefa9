"""What the rollout unit tests share: the GB300 profile's name."""

from __future__ import annotations

PROFILE = "kimi-k3-gb300-tp16"
