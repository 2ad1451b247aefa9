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
    assert (
        prove_current(_lws(generation=2, observed=2), None, []).how
        == "status.observedGeneration 2 = metadata.generation"
    )
    stale = prove_current(_lws(generation=3, observed=2), None, [])
    assert (stale.current, stale.how) == (False, "controller has not seen generation 3 yet (observedGeneration 2)")


def test_without_observed_generation_the_revision_holding_the_live_template_decides() -> None:
    old = new_revision(_lws("vllm:1"), 1)
    live = _lws("vllm:2", generation=2)
    # The controller has not recorded the new template: its old status must not count.
    waiting = prove_current(live, [old], _pods(old["metadata"]["labels"][REVISION_KEY]))
    assert waiting.current is False and "no ControllerRevision holds generation 2's template" in waiting.how
    new = new_revision(live, 2)
    key = new["metadata"]["labels"][REVISION_KEY]
    assert template_revision(live, [old, new]) is new
    half = prove_current(live, [old, new], _pods(key, 1) + _pods(old["metadata"]["labels"][REVISION_KEY])[1:])
    assert half.current is False and half.how.startswith(f"1/2 pods on template-revision-hash {key}; others on ")
    done = prove_current(live, [old, new], _pods(key))
    assert done.current and done.how.startswith(f"every pod on template-revision-hash {key} (ControllerRevision k3-")


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


def test_unproven_is_not_current_and_unreadable_revisions_can_never_prove_it() -> None:
    none_yet = prove_current(_lws(), [], _pods("x"))
    assert not none_yet.current and none_yet.provable
    assert none_yet.how.startswith("unproven: no status.observedGeneration") and "waiting for a proof" in none_yet.how
    unreadable = prove_current(_lws(), None, _pods("x"))
    assert not unreadable.current and not unreadable.provable
    assert "ControllerRevisions cannot be read" in unreadable.how
