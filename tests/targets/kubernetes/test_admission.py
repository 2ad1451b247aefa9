"""`gang_admission: auto` decided against recorded API objects (k3deploy/targets/kubernetes/admission.py): a running
release keeps its recorded mode, a usable Kueue gives kueue, anything less gives none with the reason. The same
against a real Kueue is tests/realk8s/test_kueue.py."""

from __future__ import annotations

import copy
from typing import Any

from k3deploy.profile import load_profile
from k3deploy.targets.kubernetes.admission import decide, with_mode

PROFILE = load_profile("kimi-k3-gb300-tp16")
NAMESPACE = "kimi-k3"
API = "kueue.x-k8s.io/v1beta2"


def _kueue_objects(quota: int = 32) -> list[dict[str, Any]]:
    """What the Kueue page (docs/guide/kueue.md) has an operator create, as the server returns it."""
    return [
        {"kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"kind": "LocalQueue", "metadata": {"name": "k3deploy"}, "spec": {"clusterQueue": "gb300"}},
        {
            "kind": "ClusterQueue",
            "metadata": {"name": "gb300"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu", "cpu"],
                        "flavors": [
                            {
                                "name": "gb300",
                                "resources": [
                                    {"name": "nvidia.com/gpu", "nominalQuota": quota},
                                    {"name": "cpu", "nominalQuota": 1000},
                                ],
                            }
                        ],
                    }
                ]
            },
        },
        {"kind": "ResourceFlavor", "metadata": {"name": "gb300"}, "spec": {"topologyName": "nvl72"}},
        {
            "kind": "Topology",
            "metadata": {"name": "nvl72"},
            "spec": {"levels": [{"nodeLabel": "nvidia.com/gpu.clique"}, {"nodeLabel": "kubernetes.io/hostname"}]},
        },
    ]


class RecordedApi:
    """get/served/apply(dry_run) answered from recorded objects; the dry run marks a queued LeaderWorkerSet as Kueue's
    LeaderWorkerSet webhook does when `integration` is on."""

    def __init__(self, objects: list[dict[str, Any]], *, served: bool = True, integration: bool = True) -> None:
        self.objects, self.kueue_served, self.integration = objects, served, integration
        self.dry_runs: list[dict[str, Any]] = []

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return next((o for o in self.objects if (o["kind"], o["metadata"]["name"]) == (kind, name)), None)

    def served(self, api_version: str, kind: str) -> bool:
        return self.kueue_served or not api_version.startswith("kueue.")

    def apply(self, obj: dict[str, Any], *, force: bool = False, dry_run: bool = False) -> dict[str, Any]:
        assert dry_run, "deciding auto must not change the cluster"
        self.dry_runs.append(obj)
        out = copy.deepcopy(obj)
        if self.integration and "kueue.x-k8s.io/queue-name" in out["metadata"].get("labels", {}):
            template = out["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]
            template.setdefault("annotations", {})["kueue.x-k8s.io/pod-suspending-parent"] = "leaderworkerset"
        return out


def test_a_usable_kueue_makes_auto_kueue_without_rendering_or_changing_anything() -> None:
    """The set is rendered once, after the decision; preflight then tries Kueue's LeaderWorkerSet integration on it."""
    api = RecordedApi(_kueue_objects(), integration=False)
    mode, why = decide(api, PROFILE, NAMESPACE)  # type: ignore[arg-type]
    assert mode == "kueue" and "LocalQueue k3deploy" in why
    assert api.dry_runs == []


def test_without_a_usable_kueue_auto_is_none_and_says_what_is_missing() -> None:
    cases = [
        (RecordedApi([], served=False), "Workload kind is not served"),
        (RecordedApi(_kueue_objects(quota=8)), "8"),
        (RecordedApi([o for o in _kueue_objects() if o["kind"] != "LocalQueue"]), "no LocalQueue k3deploy"),
    ]
    for api, missing in cases:
        mode, why = decide(api, PROFILE, NAMESPACE)  # type: ignore[arg-type]
        assert mode == "none", why
        assert why.startswith("no usable Kueue") and (missing in why or "16 nvidia.com/gpu" in why), why


def test_a_running_release_keeps_the_mode_it_was_rendered_with() -> None:
    for recorded in ("none", "kueue"):
        lws = {
            "kind": "LeaderWorkerSet",
            "metadata": {"name": PROFILE.name, "annotations": {"k3deploy/gang-admission": recorded}},
        }
        # A usable Kueue does not flip a release rendered with none, nor a missing one a kueue release.
        objects = [lws, *_kueue_objects()] if recorded == "none" else [lws]
        api = RecordedApi(objects, served=recorded == "none")
        mode, why = decide(api, PROFILE, NAMESPACE)  # type: ignore[arg-type]
        assert (mode, api.dry_runs) == (recorded, [])
        assert "recorded on the running LeaderWorkerSet" in why


def test_with_mode_changes_only_the_gang_admission() -> None:
    decided = with_mode(PROFILE, "kueue")
    assert decided.kubernetes.gang_admission == "kueue"
    assert decided.model_dump(exclude={"kubernetes"}) == PROFILE.model_dump(exclude={"kubernetes"})
    assert PROFILE.kubernetes.gang_admission == "auto"
