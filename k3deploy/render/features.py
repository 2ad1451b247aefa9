"""Features gated on the versions of the cluster's controllers the set is rendered for. Pure.

`kubernetes.lws_version` and `kubernetes.dra_driver_version` name the installed LeaderWorkerSet and NVIDIA DRA
driver releases; preflight compares them with what the cluster runs.
"""

from __future__ import annotations

from k3deploy.errors import ProfileError
from k3deploy.profile.model import Profile, release_version

#: DRA driver release from which IMEXDaemonsWithDNSNames is on by default (Beta), so ComputeDomain numNodes 0
#: releases pods as soon as their local IMEX daemon runs (k8s-dra-driver-gpu pkg/featuregates/featuregates.go:
#: 25.8 in the calendar scheme, which featuregates.go calls 0.2; the renamed driver's first release is v0.4.0, so a
#: profile never names 0.1-0.3: KubernetesSpec refuses them). Before it numNodes must be the number of nodes joining.
DRA_DNS_NAMES = (0, 2, 0)
#: The driver's calendar releases and their SemVer equivalents (the comment above defaultFeatureGates in
#: featuregates.go: ~25.3 -> 0.1, ~25.8 -> 0.2, ~25.12 -> 0.3, ~26.4 -> 0.4).
_DRA_CALENDAR = ((26, 4, (0, 4, 0)), (25, 12, (0, 3, 0)), (25, 8, (0, 2, 0)), (25, 3, (0, 1, 0)))


def dra_semver(version: str) -> tuple[int, int, int]:
    """The DRA driver release as SemVer: calendar releases (25.8.1) map to the minor that replaced them."""
    major, minor, patch = release_version(version)
    if major < 25:
        return major, minor, patch
    for cal_major, cal_minor, semver in _DRA_CALENDAR:
        if (major, minor) >= (cal_major, cal_minor):
            return semver
    return 0, 0, 0


def compute_domain_num_nodes(profile: Profile) -> int:
    """ComputeDomain spec.numNodes: 0 (the driver's recommendation) where DNS-named IMEX daemons are the default.

    Several groups share the one ComputeDomain; only drivers with DNS-named daemons split it into one IMEX domain per
    clique. Older ones write every node of the domain into one IMEX config and wait for numNodes of them
    (k8s-dra-driver-gpu v25.3 cmd/compute-domain-daemon/computedomain.go MaybePushNodesUpdate): groups in different
    cliques would share an IMEX domain across NVLink partitions, so replicas > 1 is refused there.
    """
    if dra_semver(profile.kubernetes.dra_driver_version) >= DRA_DNS_NAMES:
        return 0
    if profile.parallel.replicas > 1 and profile.kubernetes.compute_domain:
        raise ProfileError(
            f"parallel.replicas {profile.parallel.replicas} needs NVIDIA DRA driver >= 25.8 (or the renamed v0.4.0+); kubernetes.dra_driver_version "
            f"is {profile.kubernetes.dra_driver_version}, whose ComputeDomain puts every group's nodes into one IMEX domain",
            hint="upgrade the DRA driver and set kubernetes.dra_driver_version, or deploy one group per profile",
        )
    return profile.parallel.nodes
