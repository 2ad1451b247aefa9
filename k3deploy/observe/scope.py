"""The `Scope` of a rendered profile's series: the labels its ServiceMonitor's targets, its pods and its smoke Job
carry in Prometheus. Pure."""

from __future__ import annotations

from k3deploy.lws import colours
from k3deploy.observe.promql import Scope
from k3deploy.profile.model import Profile
from k3deploy.profile.object_names import api_service_name, smoke_job_name


def profile_scope(profile: Profile) -> Scope:
    """Series of the profile's deployment: the Prometheus Operator labels a ServiceMonitor's targets with the
    `namespace` and `service` of the scraped Service; LeaderWorkerSet names leader pods `<lws>-<group>` and
    worker pods `<lws>-<group>-<worker>`, where `<lws>` is the profile's name or, after a blue-green upgrade, its
    other colour (lws.colours). The set's Job pods (`<name>-smoke-...`, `<name>-prefetch-...`) are not serving pods."""
    name, dcgm = profile.name, profile.kubernetes.dcgm_labels
    # A profile name is a DNS label ([a-z0-9-]): nothing in it needs escaping in a regex.
    either = "(" + "|".join(colours(name)) + ")"
    return Scope(
        namespace=profile.kubernetes.namespace,
        service=api_service_name(profile),
        pod_prefix=name,
        smoke_job=smoke_job_name(profile),
        leader_pattern=f"{either}-[0-9]+",
        pod_pattern=f"{either}-[0-9]+(-[0-9]+)?",
        gpu_namespace_label=dcgm.namespace,
        gpu_pod_label=dcgm.pod,
        gpu_host_label=dcgm.hostname,
        gpu_index_label=dcgm.gpu,
    )
