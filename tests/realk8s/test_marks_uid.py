"""The traffic gate's mark on the real API server (targets/kubernetes/marks.py): a leader marked by the uid the list
found it with, with no read of the pod first, is refused when the pod was re-created since (same name, new uid)
and stays unlabelled; the pod as it is now takes the mark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from k3deploy.errors import SmokeUnreachable
from k3deploy.kube.api import KubeApi
from k3deploy.kube.options import KubeOptions
from k3deploy.reporter import Reporter
from k3deploy.targets.kubernetes import marks
from k3deploy.traffic_gate import GATED_LABEL
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(120)]


def _pod(namespace: str) -> dict[str, Any]:
    """The leader of group 0 of LeaderWorkerSet `kimi`, left unscheduled (no scheduler has the name): a pod that is
    deleted at once and re-created under the same name."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kimi-0", "namespace": namespace},
        "spec": {"schedulerName": "none", "containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0"}]},
    }


def test_a_mark_by_a_uid_of_a_pod_recreated_since_is_refused(
    realk8s: Plane, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = resource_path("v1", "pods", namespace)
    path = resource_path("v1", "pods", namespace, name="kimi-0")
    judged = realk8s.api.create(pods, _pod(namespace))["metadata"]["uid"]
    realk8s.api.delete(path)
    wait_until("the judged pod to be gone", lambda: realk8s.api.find(path) is None, 60)
    now = realk8s.api.create(pods, _pod(namespace))["metadata"]["uid"]
    api = KubeApi(KubeOptions(kubeconfig=str(realk8s.kubeconfig(tmp_path / "admin.kubeconfig"))))
    with pytest.raises(SmokeUnreachable, match=r"leader kimi-0 changed while it was marked \(\d+\)"):
        marks.mark(api, namespace, "kimi", 0, judged, Reporter(interactive=False), record_revision=False)
    assert GATED_LABEL not in (realk8s.api.get(path)["metadata"].get("labels") or {})
    marks.mark(api, namespace, "kimi", 0, now, Reporter(interactive=False), record_revision=False)
    assert realk8s.api.get(path)["metadata"]["labels"][GATED_LABEL] == "true"
    assert capsys.readouterr().err.splitlines() == ["    leader kimi-0 takes traffic: its gate passed"]
