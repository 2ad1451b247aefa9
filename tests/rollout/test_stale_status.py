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

from tests.kubeapi.controllers.lws_revision import REVISION_KEY, patch
from tests.rollout.conftest import K3, NAMESPACE, PROFILE

pytestmark = pytest.mark.timeout(180)
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


def _serving_pods(cluster: Any) -> list[dict]:
    return [p for p in cluster.store.list("pods", NAMESPACE, label=f"{NAME_LABEL}={PROFILE}")
            if not p["metadata"].get("deletionTimestamp")]


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
def test_template_change_waits_for_pods_of_the_new_template_on_a_slow_controller(k3: K3, cluster: Any,
                                                                                 version: str) -> None:
    controller = cluster.controllers.lws
    controller.version = version
    first = k3("apply", "--timeout", "60s")
    assert first.returncode == 0, first.stderr
    old_key = _current_key(cluster)
    assert old_key and {p["metadata"]["labels"][REVISION_KEY] for p in _serving_pods(cluster)} == {old_key}

    # The controller sees the new generation only 3 s after it is written: until then its status is the old one.
    controller.reaction_delay = 3.0
    second = k3("apply", "--timeout", "60s", "--set", "vllm.max_model_len=524288")
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
