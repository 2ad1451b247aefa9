"""The in-place replacement warning of `apply`: only a configured single-group LeaderWorkerSet without surge."""

from __future__ import annotations

from typing import Any

from k3deploy.rollout.surge import in_place_note


def _lws(replicas: int = 1, surge: Any = 0) -> dict[str, Any]:
    return {
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "k3"},
        "spec": {"replicas": replicas, "rolloutStrategy": {"rollingUpdateConfiguration": {"maxSurge": surge}}},
    }


def test_only_a_configured_single_group_without_surge_is_noted() -> None:
    assert "one replica and maxSurge 0" in (in_place_note(_lws(), "configured") or "")
    assert in_place_note(_lws(), "created") is None
    assert in_place_note(_lws(), "unchanged") is None
    assert in_place_note(_lws(replicas=2), "configured") is None
    assert in_place_note(_lws(surge=1), "configured") is None
    assert in_place_note({"kind": "Service", "metadata": {"name": "k3"}}, "configured") is None
