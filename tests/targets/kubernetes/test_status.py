"""`k3deploy status` judges a LeaderWorkerSet the way `wait` does, on recorded API objects (no server): a ready
status counts only once the controller's `status.observedGeneration` has reached the spec's generation.

LeaderWorkerSet controllers before v0.9.0 write no `status.observedGeneration` (kubernetes-sigs/lws
api/leaderworkerset/v1/leaderworkerset_types.go gained it in v0.9.0); k3deploy does not support them, and `status`
says why their Available=True proves nothing. The v0.8 status shape is recorded here as its updateStatus writes it
(pkg/controllers/leaderworkerset_controller.go: conditions, replicas, readyReplicas, updatedReplicas,
hpaPodSelector; no observedGeneration).
"""

from __future__ import annotations

import copy
from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.targets.kubernetes.status import describe
from k3deploy.targets.kubernetes.view import kubernetes_status_view
from tests.observe.test_canary_status import ON, _kept
from tests.support.lws_revision import REVISION_KEY, new_revision

PROFILE = "kimi-k3-gb300-tp16"
NAMESPACE = "kimi-k3"
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


class RecordedApi:
    """The reads `describe` makes, answered from recorded objects by (kind, name); the selectors asked recorded."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.selectors: list[tuple[str, str | None]] = []

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The recorded object of that kind and name, else None (as KubeApi.get for a missing object)."""
        return next(
            (o for o in self.objects if (o["kind"], o["metadata"]["name"]) == (kind, name)),
            None,
        )

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        """Every recorded object of the kind (all of them belong to the one set)."""
        self.selectors.append((kind, label_selector))
        return [o for o in self.objects if o["kind"] == kind], "1"


def _lws_v08() -> dict[str, Any]:
    """The rendered LeaderWorkerSet as a v0.8 controller leaves it once its one group is ready."""
    rendered = next(m.obj for m in build(load_profile(PROFILE)) if m.obj["kind"] == "LeaderWorkerSet")
    lws = copy.deepcopy(rendered)
    lws["metadata"].update({"namespace": NAMESPACE, "uid": "0b3c6a1e-lws", "generation": 1})
    lws["status"] = {
        "conditions": [
            {"type": "Available", "status": "True", "reason": "AllGroupsReady", "message": "All replicas are ready"},
            {"type": "Progressing", "status": "False", "reason": "Ready", "message": "Replicas are progressing"},
        ],
        "replicas": 1,
        "readyReplicas": 1,
        "updatedReplicas": 1,
        "hpaPodSelector": f"{NAME_LABEL}={PROFILE},leaderworkerset.sigs.k8s.io/worker-index=0",
    }
    return lws


def _pods(key: str) -> list[dict[str, Any]]:
    """The group's 4 pods (leader and 3 workers), Running and Ready, labelled with revision `key`."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": PROFILE + "-0" + (f"-{i}" if i else ""),
                "namespace": NAMESPACE,
                "labels": {
                    NAME_LABEL: PROFILE,
                    "leaderworkerset.sigs.k8s.io/group-index": "0",
                    "leaderworkerset.sigs.k8s.io/worker-index": str(i),
                    REVISION_KEY: key,
                },
            },
            "spec": {"nodeName": f"gb300-{i}"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
        }
        for i in range(4)
    ]


def _with_new_template(lws: dict[str, Any]) -> dict[str, Any]:
    """Someone changed the template (--max-model-len): generation 2, the status still the old one's."""
    changed = copy.deepcopy(lws)
    command = changed["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"]
    command[command.index("--max-model-len") + 1] = "524288"
    changed["metadata"]["generation"] = 2
    return changed


def _lws_row(state: dict[str, Any]) -> dict[str, Any]:
    (row,) = [r for r in state["objects"] if r["kind"] == "LeaderWorkerSet"]
    return row


def test_a_v08_status_is_stale_however_ready_it_says_it_is() -> None:
    lws = _lws_v08()
    revision = new_revision(lws, 1, version="v0.8.0")
    api = RecordedApi([lws, revision, *_pods(revision["metadata"]["labels"][REVISION_KEY])])
    state = describe(api, load_profile(PROFILE), [lws], "")
    row = _lws_row(state)
    assert state["ready"] is False and (row["ready"], row["state"]) == (False, "Stale")
    assert "no status.observedGeneration" in row["proof"] and "before v0.9.0" in row["proof"]
    assert "ControllerRevision" not in [kind for kind, _ in api.selectors]  # nothing more to read for it

    lws["status"]["observedGeneration"] = 1  # the same status from v0.9 proves itself
    row = _lws_row(describe(RecordedApi([lws]), load_profile(PROFILE), [lws], ""))
    assert (row["ready"], row["state"], row["proof"]) == (
        True,
        "Available",
        "status.observedGeneration 1 = metadata.generation",
    )


def test_a_v09_status_of_an_older_generation_is_progressing_by_its_own_observed_generation() -> None:
    """v0.9 says itself that its status is older than the spec: no ControllerRevision is needed to tell."""
    lws = _lws_v08()
    lws["status"]["observedGeneration"] = 1
    revision = new_revision(lws, 1)
    key = revision["metadata"]["labels"][REVISION_KEY]
    stale = _with_new_template(lws)
    state = describe(RecordedApi([stale, revision, *_pods(key)]), load_profile(PROFILE), [stale], "")
    row = _lws_row(state)
    assert state["ready"] is False and (row["ready"], row["state"]) == (False, "Progressing")
    assert row["detail"].startswith("controller has not seen generation 2 yet")
    assert row["proof"] == "controller has not seen generation 2 yet (observedGeneration 1)"


def test_status_shows_the_canarys_last_run_from_its_report_configmap() -> None:
    profile = load_profile(PROFILE, ON)
    lws = _lws_v08()
    revision = new_revision(lws, 1, version="v0.8.0")
    pods = _pods(revision["metadata"]["labels"][REVISION_KEY])
    kept = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{PROFILE}-canary-report", "namespace": NAMESPACE},
        "data": {"report.json": _kept(300.0, 4.7).to_json()},
    }
    state = describe(RecordedApi([lws, revision, *pods, kept]), profile, [lws], "")
    assert state["canary"]["decode_tok_s"] == 300.0 and state["canary"]["verdict"] == "decode 300.0 < 333 tok/s"
    shown = "\n".join(str(part) for part in kubernetes_status_view(state).renderables)
    assert "last canary: 2026-12-01 06:17:42Z · decode 300.0 tok/s" in shown
    # Not run yet: said so; canary off: no line at all.
    empty = describe(RecordedApi([lws, revision, *pods]), profile, [lws], "")
    assert empty["canary"] is None
    assert "last canary: none recorded" in "\n".join(str(p) for p in kubernetes_status_view(empty).renderables)
    off = describe(RecordedApi([lws, revision, *pods, kept]), load_profile(PROFILE), [lws], "")
    assert "canary" not in off


def test_each_pod_says_where_its_weights_loaded_from() -> None:
    """weight_staging node-local: the pick-weights init container's termination message (kubelet's
    state.terminated.message), its last run's after a restart; "-" (None) without staging or before it finished."""
    lws = _lws_v08()
    revision = new_revision(lws, 1, version="v0.8.0")
    pods = _pods(revision["metadata"]["labels"][REVISION_KEY])
    done = {"terminated": {"exitCode": 0, "reason": "Completed", "message": "node-local"}}
    pods[0]["status"]["initContainerStatuses"] = [{"name": "pick-weights", "state": done}]
    pods[1]["status"]["initContainerStatuses"] = [
        {
            "name": "pick-weights",
            "state": {"running": {}},
            "lastState": {"terminated": {**done["terminated"], "message": "shared volume"}},
        }
    ]
    failed = {"terminated": {"exitCode": 3, "message": "error: the weight volume has no ref main"}}
    pods[2]["status"]["initContainerStatuses"] = [{"name": "pick-weights", "state": failed}]
    state = describe(RecordedApi([lws, revision, *pods]), load_profile(PROFILE), [lws], "")
    assert [p["weights"] for p in state["pods"]] == ["node-local", "shared volume", None, None]
