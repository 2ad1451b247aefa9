"""The in-cluster `k3deploy guard` (kubernetes.guard): names, the command line and what its RBAC grants. Pure.

A Deployment of one replica running `k3deploy guard` in a loop on the profile ConfigMap's profile, in the k3deploy
image (kubernetes.smoke_image, pinned like the Jobs'), under a ServiceAccount of its own. What it may do is what
the loop calls (fault_guard/snapshot.py, act.py, evidence_configmap.py; targets/kubernetes/election.py; with
smoke.gate_traffic its re-gate, targets/kubernetes/regate.py), nothing more: the rules are in templates/guard-role.yaml.j2 and guard-clusterrole.yaml.j2, each with the call it serves.
"""

from __future__ import annotations

from collections.abc import Callable

from k3deploy.lws import colours, leader_name
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import guard_lease_name, lock_lease_name, smoke_job_name

#: Port of the guard's metrics (k3deploy_guard_*), scraped by its PodMonitor.
METRICS_PORT = 9400
#: Seconds between two passes of the in-cluster loop.
INTERVAL_S = 30
#: The component label of the guard's objects.
GUARD_COMPONENT = "guard"


def wanted(profile: Profile) -> bool:
    """The guard's objects are rendered (kubernetes.guard)."""
    return profile.kubernetes.guard


def monitor_wanted(profile: Profile) -> bool:
    """Its PodMonitor too: where the set has a ServiceMonitor (the same Prometheus Operator)."""
    return profile.kubernetes.guard and profile.kubernetes.service_monitor


def policy_wanted(profile: Profile) -> bool:
    """Its NetworkPolicy, opening the metrics port to Prometheus: where the set has NetworkPolicies and a
    monitoring namespace."""
    kube = profile.kubernetes
    return kube.guard and kube.network_policy and kube.monitoring_namespace is not None


def guard_name(profile: Profile) -> str:
    """Name of the guard's Deployment, ServiceAccount, Role, RoleBinding, PodMonitor and NetworkPolicy."""
    return f"{profile.name}-guard"


def cluster_role_name(profile: Profile) -> str:
    """Name of its ClusterRole and ClusterRoleBinding: cluster-scoped, so the namespace is part of it."""
    return f"k3deploy-guard-{profile.kubernetes.namespace}-{profile.name}"


def regate_names(profile: Profile) -> dict[str, object]:
    """What the re-gate (smoke.gate_traffic, targets/kubernetes/regate.py) names in the guard's Role: the leader pods
    it may read and label (LWS names a group's leader `<lws>-<group>`, either colour), the LeaderWorkerSets whose
    gated revision it reads, the release's lock Lease and smoke Job it stands aside for; empty when it does not gate."""
    if not profile.smoke.gate_traffic:
        return {}
    return {
        "leaders": [
            leader_name(lws, group) for lws in colours(profile.name) for group in range(profile.parallel.replicas)
        ],
        "sets": list(colours(profile.name)),
        "records": not profile.smoke.gate_restarts,
        "lock": lock_lease_name(profile.name),
        "smoke_job": smoke_job_name(profile),
    }


def guard_context(
    profile: Profile, profile_path: str, labels: Callable[[str], dict[str, str]]
) -> dict[str, dict[str, object]]:
    """The templates' `guard` values (empty when kubernetes.guard is off); `labels` gives a component's labels."""
    if not profile.kubernetes.guard:
        return {}
    reads_domains = profile.kubernetes.compute_domain and profile.guard.compute_domain
    return {
        "guard": {
            "name": guard_name(profile),
            "cluster_role": cluster_role_name(profile),
            "lease": guard_lease_name(profile.name),
            "metrics_port": METRICS_PORT,
            "compute_domains": reads_domains,
            "regate": regate_names(profile),
            # A Prometheus selects PodMonitors on the ServiceMonitor's labels (kubernetes.service_monitor_labels).
            "monitor_labels": {**labels(GUARD_COMPONENT), **profile.kubernetes.service_monitor_labels},
            "args": [
                "guard",
                "-p",
                profile_path,
                "--evidence-configmap",
                "--metrics-port",
                str(METRICS_PORT),
                "--interval",
                f"{INTERVAL_S}s",
            ],
        }
    }
