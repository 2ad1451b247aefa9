"""Unproven is not ready: a v0.8-style LWS whose status says Available, with its ControllerRevisions unreadable,
fails the wait (Unprovable) instead of being taken as ready while its pods may run the old template."""

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


def _state(revisions_readable: bool) -> WaitState:
    state = WaitState(
        objects={
            "LeaderWorkerSet": {"k3": _lws("vllm:new", 2)},
            REVISIONS: {},
            "Pod": {"k3-0": _pod("k3-0", key="old-key")},
        }
    )
    if not revisions_readable:
        state.unavailable.add(REVISIONS)
    return state


def test_available_with_unreadable_revisions_fails_the_wait_as_unprovable() -> None:
    verdict = judge(_state(revisions_readable=False), [_lws("vllm:new", 2)], now=0.0, grace_s=60)
    assert not verdict.ready
    assert verdict.failure is not None and verdict.failure.reason == "Unprovable"
    assert "ControllerRevisions cannot be read" in verdict.failure.message


def test_available_with_no_revision_recorded_yet_waits_for_proof() -> None:
    verdict = judge(_state(revisions_readable=True), [_lws("vllm:new", 2)], now=0.0, grace_s=60)
    assert not verdict.ready and verdict.failure is None
    assert any("waiting for a proof" in r.detail for r in verdict.rows)
