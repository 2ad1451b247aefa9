"""Gather the facts a preflight run asks for and evaluate them: the entry point `up` and the CLI share."""

from __future__ import annotations

import os

from k3deploy.kube.client import KubeOptions
from k3deploy.preflight.checks import evaluate
from k3deploy.preflight.facts import Facts
from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult


def host_cache_path(profile: Profile) -> str:
    """Where this host would keep the weights: the pod's cache mount, or the local target's state directory."""
    if profile.target == "local":
        return profile.local.state_dir or os.path.join(os.path.expanduser("~"), ".cache", "k3deploy")
    return profile.kubernetes.model_cache_path


def run_preflight(profile: Profile, node: bool, cluster: bool, kube: KubeOptions | None = None, *,
                  gpus: bool = True) -> list[CheckResult]:
    """Check `profile` against this node (`node`: GPUs unless `gpus=False`, and host) and/or the cluster (`cluster`).

    Raises EnvironmentProblem (exit 3) when it cannot look: no NVML and no nvidia-smi, API unreachable, forbidden.
    """
    gpu_facts = host_facts = cluster_facts = None
    if node:
        from k3deploy.preflight import node as probe

        gpu_facts = probe.gpu_facts() if gpus else None
        host_facts = probe.host_facts(host_cache_path(profile))
    if cluster:
        from k3deploy.preflight.cluster import cluster_facts as read_cluster

        cluster_facts = read_cluster(profile, kube or KubeOptions())
    return evaluate(profile, Facts(gpu=gpu_facts, host=host_facts, cluster=cluster_facts))
