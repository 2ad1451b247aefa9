"""Keeping an evidence bundle in the cluster (the in-cluster guard, `--evidence-configmap`): a new ConfigMap each time.

The guard's pod has no folder that outlives it, and a PVC would have to be provisioned for a few kilobytes a month;
a ConfigMap in the release's namespace outlives the pod and is read with `kubectl get configmap -o yaml`. It is only
ever created (the Role grants create, not update or delete): a name taken already gets `-1`, `-2`, ... and nothing
is overwritten. A ConfigMap holds at most 1 MiB (the API server's limit on an object in etcd), so the bundle is
bounded below that (`CONFIGMAP_MAX_BYTES`) whatever `guard.evidence_max_bytes` says.
"""

from __future__ import annotations

from k3deploy.errors import KubeError
from k3deploy.kube.api import KubeApi

#: Most bytes of a bundle kept in a ConfigMap: under the 1 MiB object limit, with room for the metadata.
CONFIGMAP_MAX_BYTES = 1_000_000
#: The label on every evidence ConfigMap, with the release as its value (`kubectl get cm -l k3deploy/guard-evidence`).
EVIDENCE_LABEL = "k3deploy/guard-evidence"
#: The key of the bundle in the ConfigMap's data.
BUNDLE_KEY = "bundle.json"
#: How many suffixed names are tried before giving up.
MAX_SUFFIX = 100


def configmap_name(bundle_name: str) -> str:
    """The ConfigMap's name of a bundle file name: `kimi-group-0-20261205T110000Z.json` -> `kimi-group-0-20261205t110000z`
    (a DNS subdomain: lower case, no dot-suffix)."""
    return bundle_name.removesuffix(".json").lower()


def write_configmap(api: KubeApi, namespace: str, release: str, bundle_name: str, data: bytes) -> str:
    """Create a new ConfigMap holding `data` and return `ConfigMap/NAMESPACE/NAME`."""
    base = configmap_name(bundle_name)
    for n in range(MAX_SUFFIX):
        name = base if n == 0 else f"{base}-{n}"
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {EVIDENCE_LABEL: release, "app.kubernetes.io/managed-by": "k3deploy"},
            },
            "data": {BUNDLE_KEY: data.decode()},
        }
        try:
            api.create(body)
        except KubeError as exc:
            if exc.status == 409:
                continue
            raise
        return f"ConfigMap/{namespace}/{name}"
    raise KubeError(f"ConfigMap {base} and {MAX_SUFFIX - 1} suffixed names exist already", status=409)
