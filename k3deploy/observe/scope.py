"""The `Scope` of a rendered profile's series: the labels its ServiceMonitor's targets, its pods and its smoke Job
carry in Prometheus. Pure."""

from __future__ import annotations

from k3deploy.observe.promql import Scope
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import api_service_name


def profile_scope(profile: Profile) -> Scope:
    """Series of the profile's deployment: the Prometheus Operator labels a ServiceMonitor's targets with the
    `namespace` and `service` of the scraped Service; LeaderWorkerSet names leader pods `<name>-<group>` and
    worker pods `<name>-<group>-<worker>`."""
    name = profile.name
    return Scope(
        namespace=profile.kubernetes.namespace,
        service=api_service_name(profile),
        pod_prefix=name,
        smoke_job=f"{name}-smoke",
        leader_pattern=f"{name}-[0-9]+",
    )
