"""Every template of the set that makes pods is started on a real kubelet by the realk8s tier (its `real_node`
fixture: a kubelet, containerd and runc running the rendered pod spec with only the image replaced), so a new one
cannot join the set untried there: volumes, probes, securityContext and env expansion are only ever executed there."""

from __future__ import annotations

from pathlib import Path

from k3deploy.render.manifests import SET

REALK8S = Path(__file__).resolve().parents[1] / "realk8s"
#: Kinds whose objects are, or make, pods.
POD_KINDS = {"Pod", "Job", "CronJob", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "LeaderWorkerSet"}
#: Template -> the realk8s modules that start its pods on a real node.
ON_A_REAL_KUBELET = {
    "node-preflight-job.yaml.j2": ("test_rendered_k3deploy_jobs.py",),
    "prefetch-job.yaml.j2": ("test_rendered_prefetch.py",),
    "weight-staging-daemonset.yaml.j2": ("test_rendered_k3deploy_jobs.py",),
    "leaderworkerset.yaml.j2": (
        "test_rendered_serving_pods.py",
        "test_rendered_serving_lws.py",
        "test_cluster_cpu.py",
    ),
    "epp-deployment.yaml.j2": ("test_rendered_serving_pods.py",),
    "guard-deployment.yaml.j2": ("test_rendered_k3deploy_jobs.py",),
    "canary-cronjob.yaml.j2": ("test_rendered_k3deploy_jobs.py",),
    "smoke-job.yaml.j2": ("test_rendered_k3deploy_jobs.py",),
}


def test_every_template_that_makes_pods_is_started_on_a_real_kubelet() -> None:
    assert {entry.template for entry in SET if entry.kind in POD_KINDS} == set(ON_A_REAL_KUBELET)
    for template, modules in ON_A_REAL_KUBELET.items():
        for module in modules:
            source = (REALK8S / module).read_text()
            assert "real_node: RealNode" in source, (template, module)
