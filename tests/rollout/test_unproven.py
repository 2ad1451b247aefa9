"""Unproven is not ready: an LWS whose status says Available but that carries no status.observedGeneration (a
controller before v0.9.0, which k3deploy does not support) fails the wait at once (Unprovable) instead of being taken
as ready, or waited on, while its pods may run the old template."""

from __future__ import annotations

from k3deploy.lws import GROUP_INDEX_LABEL, NAME_LABEL, TEMPLATE_REVISION_LABEL, WORKER_INDEX_LABEL
from k3deploy.rollout.judge import REVISIONS, WaitState, judge
from tests.rollout.test_judge import _lws


def _pod(name: str, key: str) -> dict:
    labels = {NAME_LABEL: "k3", GROUP_INDEX_LABEL: "0", WORKER_INDEX_LABEL: "0", TEMPLATE_REVISION_LABEL: key}
    return {
        "metadata": {"name": name, "uid": name, "labels": labels},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_available_without_observed_generation_fails_the_wait_as_unprovable() -> None:
    state = WaitState(
        objects={"LeaderWorkerSet": {"k3": _lws("vllm:new", 2)}, REVISIONS: {}, "Pod": {"k3-0": _pod("k3-0", "k")}}
    )
    verdict = judge(state, [_lws("vllm:new", 2)], now=0.0, grace_s=60)
    assert not verdict.ready
    assert verdict.failure is not None and verdict.failure.reason == "Unprovable"
    assert "no status.observedGeneration" in verdict.failure.message and "before v0.9.0" in verdict.failure.message


def test_the_same_status_with_observed_generation_is_ready() -> None:
    state = WaitState(objects={"LeaderWorkerSet": {"k3": _lws("vllm:new", 2, observed=2)}, REVISIONS: {}, "Pod": {}})
    assert judge(state, [_lws("vllm:new", 2)], now=0.0, grace_s=60).ready
