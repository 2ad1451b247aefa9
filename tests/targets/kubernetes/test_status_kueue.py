"""`status` says per group what Kueue decided (k3deploy/targets/kubernetes/status.py `_admission`, view.py), from the
live LeaderWorkerSet's queue label and one list of the Workloads; the same on a real Kueue is tests/realk8s/test_kueue.py."""

from __future__ import annotations

import copy
from typing import Any

from rich.console import Console

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.targets.kubernetes.status import describe
from k3deploy.targets.kubernetes.view import kubernetes_status_view
from tests.targets.kubernetes.test_status import RecordedApi

PROFILE = load_profile("kimi-k3-gb300-tp16", ["kubernetes.gang_admission=kueue"])
NO_ROOM = "couldn't assign flavors to pod set leader: topology \"nvl72\" doesn't allow to fit any of 4 pod(s)"


class KueueApi(RecordedApi):
    """RecordedApi that serves Kueue's Workload kind."""

    def served(self, api_version: str, kind: str) -> bool:
        return True


def _workload(index: int, conditions: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "kind": "Workload",
        "metadata": {
            "name": f"leaderworkerset-{PROFILE.name}-{index}-abc12",
            "annotations": {
                "kueue.x-k8s.io/job-owner-name": PROFILE.name,
                "kueue.x-k8s.io/component-workload-index": str(index),
            },
        },
        "status": {"conditions": conditions},
    }


def test_status_shows_which_group_kueue_admitted_and_which_it_holds() -> None:
    objects = [m.obj for m in build(PROFILE)]
    lws = copy.deepcopy(next(o for o in objects if o["kind"] == "LeaderWorkerSet"))
    workloads = [
        _workload(0, [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]),
        _workload(1, [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": NO_ROOM}]),
    ]
    api = KueueApi([lws, *workloads])
    report = describe(api, PROFILE, objects, "-")  # type: ignore[arg-type]
    assert [(g["group"], g["admitted"]) for g in report["admission"]] == [(0, True), (1, False)]
    assert report["admission"][1]["message"] == NO_ROOM
    console = Console(width=400, record=True)
    console.print(kubernetes_status_view(report))
    text = console.export_text()
    assert f"kueue: {PROFILE.name} group 0 admitted" in text
    assert f"kueue: {PROFILE.name} group 1 queued (Pending: {NO_ROOM})" in text


def test_a_set_not_queued_to_kueue_reads_no_workloads() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", ["kubernetes.gang_admission=none"])
    objects = [m.obj for m in build(profile)]
    api = KueueApi([next(o for o in objects if o["kind"] == "LeaderWorkerSet")])
    report = describe(api, profile, objects, "-")  # type: ignore[arg-type]
    assert report["admission"] == []
    assert ("Workload", None) not in api.selectors
