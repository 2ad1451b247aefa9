"""A rollout is ready only when its readiness provably belongs to the applied spec, whatever the LWS version.

LeaderWorkerSet controllers before v0.9.0 write no `status.observedGeneration` (kubernetes-sigs/lws
api/leaderworkerset/v1/leaderworkerset_types.go gained it in v0.9.0); right after a template change their status
still shows the old Available=True with every group ready and updated. What proves the new template then is the
pods' `leaderworkerset.sigs.k8s.io/template-revision-hash` against the key of the ControllerRevision that holds the
current template (pkg/utils/revision/revision_utils.go).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.rollout.conftest import K3, NAMESPACE, PROFILE
from tests.support.lws_revision import REVISION_KEY, patch

pytestmark = pytest.mark.timeout(180)
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


def _serving_pods(cluster: Any) -> list[dict]:
    return [
        p
        for p in cluster.store.list("pods", NAMESPACE, label=f"{NAME_LABEL}={PROFILE}")
        if not p["metadata"].get("deletionTimestamp")
    ]


def _current_key(cluster: Any) -> str | None:
    """The revision key the controller gives the LWS's current template (None until it has recorded it)."""
    lws = cluster.store.get("leaderworkersets", PROFILE, NAMESPACE)
    for revision in cluster.store.list("controllerrevisions", NAMESPACE, label=f"{NAME_LABEL}={PROFILE}"):
        if revision["data"] == patch(lws):
            return revision["metadata"]["labels"][REVISION_KEY]
    return None


def _ready(pod: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", []))


@pytest.mark.parametrize("version", ["v0.8", "v0.9"])
def test_template_change_waits_for_pods_of_the_new_template_on_a_slow_controller(
    k3: K3, cluster: Any, version: str
) -> None:
    controller = cluster.controllers.lws
    controller.version = version
    first = k3("apply", "--timeout", "60s")
    assert first.returncode == 0, first.stderr
    old_key = _current_key(cluster)
    assert old_key and {p["metadata"]["labels"][REVISION_KEY] for p in _serving_pods(cluster)} == {old_key}

    # The controller sees the new generation only 3 s after it is written: until then its status is the old one.
    controller.reaction_delay = 3.0
    second = k3("apply", "--timeout", "60s", "--yes", "--set", "vllm.max_model_len=524288")
    assert second.returncode == 0, second.stderr

    # When the rollout said ready, every serving pod ran the new template and was ready.
    key = _current_key(cluster)
    pods = _serving_pods(cluster)
    assert key is not None and key != old_key
    assert len(pods) == 4 and {p["metadata"]["labels"][REVISION_KEY] for p in pods} == {key}
    assert all(_ready(p) for p in pods)
    for pod in pods:
        command = pod["spec"]["containers"][0]["command"]
        assert command[command.index("--max-model-len") + 1] == "524288"
    proof = f"template-revision-hash {key}" if version == "v0.8" else "observedGeneration 2"
    assert proof in second.stderr


def test_status_does_not_call_a_stale_status_ready(k3: K3, cluster: Any) -> None:
    """`k3deploy status` judges an LWS the way `wait` does: an old controller's Available=True after a spec change
    is the previous template's, so the set is not ready until the pods carry the current template's key."""
    import copy
    import json

    controller = cluster.controllers.lws
    controller.version = "v0.8"
    assert k3("apply", "--timeout", "60s").returncode == 0
    before = json.loads(k3("status", "-o", "json").stdout)
    (row,) = [r for r in before["objects"] if r["kind"] == "LeaderWorkerSet"]
    assert before["ready"] is True and (row["ready"], row["state"]) == (True, "Available")
    assert row["proof"].startswith(f"every pod on template-revision-hash {_current_key(cluster)}")

    # Someone changes the template; the busy controller has not acted on it yet, so its status is the old one.
    controller.reaction_delay = 120.0
    lws = copy.deepcopy(cluster.store.get("leaderworkersets", PROFILE, NAMESPACE))
    command = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"]
    command[command.index("--max-model-len") + 1] = "524288"
    cluster.store.replace("leaderworkersets", lws, NAMESPACE)
    conditions = cluster.store.get("leaderworkersets", PROFILE, NAMESPACE)["status"]["conditions"]
    assert {"type": "Available", "status": "True"}.items() <= next(
        c for c in conditions if c["type"] == "Available"
    ).items()

    after = k3("status", "-o", "json")
    assert after.returncode == 0, after.stderr
    state = json.loads(after.stdout)
    (row,) = [r for r in state["objects"] if r["kind"] == "LeaderWorkerSet"]
    assert state["ready"] is False and (row["ready"], row["state"]) == (False, "Stale")
    assert "no ControllerRevision holds generation 2's template yet" in row["detail"]
