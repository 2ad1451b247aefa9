"""Read the cluster's controller workloads (Deployments and DaemonSets), raw, for preflight's version checks, with
`KubeApi.look` (kube/api.py: one retry, bounded, no API discovery)."""

from __future__ import annotations

from k3deploy.errors import K3DeployError
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort

#: Where the LWS controller and the NVIDIA DRA driver install themselves by default: read when listing every
#: namespace is not allowed.
DEFAULT_NAMESPACES = ("lws-system", "nvidia-dra-driver-gpu", "dra-driver-nvidia-gpu", "nvidia")


def controller_workloads(api: KubePort) -> list[KubeObject] | None:
    """Deployments and DaemonSets of every namespace, else of the default controller namespaces; None when
    neither could be read."""
    out: list[KubeObject] = []
    try:
        for plural in ("deployments", "daemonsets"):
            out += api.look(f"list {plural}", "apps/v1", plural).get("items") or []
        return out
    except K3DeployError:
        pass
    read_any = False
    for namespace in DEFAULT_NAMESPACES:
        for plural in ("deployments", "daemonsets"):
            try:
                listed = api.look(
                    f"list {plural} in {namespace}", "apps/v1", plural, namespace=namespace, missing_ok=True
                )
            except K3DeployError:
                continue
            read_any = True
            out += (listed or {}).get("items") or []
    return out if read_any else None
