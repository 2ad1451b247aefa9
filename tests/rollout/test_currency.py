"""Which proof ties a LeaderWorkerSet's status to its current spec (pure).

Upstream: kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go (status.observedGeneration, v0.9.0),
pkg/utils/revision/revision_utils.go (ControllerRevision data and key), pkg/controllers/leaderworkerset_controller.go
(pods labelled with the revision key). The revisions here are made by tests/support/lws_revision.py, which mirrors that code.
"""

from __future__ import annotations

import copy

from k3deploy.rollout.currency import prove_current, template_revision
from tests.support.lws_revision import REVISION_KEY, new_revision


def _lws(image: str = "vllm:1", generation: int = 1, observed: int | None = None) -> dict:
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "k3", "namespace": "ns", "uid": "u-1", "generation": generation},
        "spec": {
            "replicas": 1,
            "networkConfig": {"subdomainPolicy": "Shared"},
            "leaderWorkerTemplate": {
                "size": 2,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "workerTemplate": {
                    "spec": {
                        "containers": [
                            {
                                "name": "vllm",
                                "image": image,
                                "ports": [{"containerPort": 8000}],
                                "volumeMounts": [{"name": "m", "mountPath": "/m", "readOnly": False}],
                            }
                        ]
                    }
                },
            },
        },
        "status": {},
    }
    if observed is not None:
        lws["status"]["observedGeneration"] = observed
    return lws


def _pods(key: str, count: int = 2) -> list[dict]:
    return [
        {
            "metadata": {
                "name": f"k3-0-{i}" if i else "k3-0",
                "labels": {REVISION_KEY: key, "leaderworkerset.sigs.k8s.io/group-index": "0"},
            }
        }
        for i in range(count)
    ]


def test_observed_generation_is_the_proof_when_written() -> None:
    assert prove_current(_lws(generation=2, observed=2)).how == "status.observedGeneration 2 = metadata.generation"
    stale = prove_current(_lws(generation=3, observed=2))
    assert (stale.current, stale.how) == (False, "controller has not seen generation 3 yet (observedGeneration 2)")


def test_the_newest_revision_holding_the_live_template_is_the_current_ones() -> None:
    old = new_revision(_lws("vllm:1"), 1)
    live = _lws("vllm:2", generation=2)
    assert template_revision(live, [old]) is None  # the controller has not recorded the new template yet
    new = new_revision(live, 2)
    assert template_revision(live, [old, new]) is new


def test_go_encoding_extras_and_omitted_zero_values_still_match() -> None:
    """The revision holds Go's typed encoding: `creationTimestamp: null` (LWS before v0.8.0), `resources: {}`,
    `readOnly: false` dropped."""
    live = _lws()
    revision = new_revision(live, 1, version="v0.7.0")
    stored = revision["data"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert stored["metadata"] == {"creationTimestamp": None} and stored["spec"]["containers"][0]["resources"] == {}
    del stored["spec"]["containers"][0]["volumeMounts"][0]["readOnly"]
    assert template_revision(live, [revision]) is revision
    other = copy.deepcopy(live)
    other["metadata"]["uid"] = "someone-else"
    assert template_revision(other, [revision]) is None
    # LWS v0.8.0 and later (apimachinery v0.34's `omitzero`) print no creationTimestamp at all: matched as well.
    current = new_revision(live, 2)
    assert current["data"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"] == {}
    assert template_revision(live, [current]) is current


def test_a_statefulsets_revision_with_the_lws_name_label_is_never_the_lws_template_revision() -> None:
    """The StatefulSets LWS makes for its groups get ControllerRevisions of their own from the StatefulSet controller
    (kubernetes/kubernetes pkg/controller/statefulset/stateful_set_utils.go `newRevision`: data
    `{"spec": {"template": ..., "$patch": "replace"}}`, the pod template's labels, the StatefulSet its controller), so
    a list by the LWS name label returns them too, numbered from 1 and possibly newer."""
    live = _lws()
    mine = new_revision(live, 1)
    template = live["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    statefulset = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": "k3-5d4b8c9f7",
            "namespace": "ns",
            "labels": {
                "leaderworkerset.sigs.k8s.io/name": "k3",
                REVISION_KEY: mine["metadata"]["labels"][REVISION_KEY],
            },
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "k3", "uid": "sts-1", "controller": True}
            ],
        },
        "data": {"spec": {"template": {**template, "$patch": "replace"}}},
        "revision": 2,
    }
    assert template_revision(live, [statefulset, mine]) is mine
    assert template_revision(live, [statefulset]) is None


def test_without_observed_generation_no_proof_can_ever_come() -> None:
    """A controller before LWS v0.9.0 writes none: k3deploy does not support it, and says so rather than wait."""
    unproven = prove_current(_lws())
    assert not unproven.current and not unproven.provable
    assert unproven.how.startswith("unproven: no status.observedGeneration") and "before v0.9.0" in unproven.how
