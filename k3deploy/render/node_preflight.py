"""The node-preflight Job of a rendered set pinned to the hosts `up` found eligible (pure).

templates/node-preflight-job.yaml.j2 renders this shape when kubernetes.node_preflight_hosts is set (an Indexed Job
of one pod per host, a required hostname affinity); tests/render/test_node_preflight_pinned.py holds the two equal. `up`
pins the set it already rendered instead of rendering a second profile: the profile ConfigMap and the smoke Job's
profile digest stay those of the profile the user gave (a second render put the hosts into both, so which trays were
free changed the smoke Job's template and the applied profile differed from `k3deploy render`'s)."""

from __future__ import annotations

import copy

from k3deploy.kobject import KubeObject
from k3deploy.render.manifests import COMPONENT_LABEL, NODE_PREFLIGHT_COMPONENT

HOSTNAME_LABEL = "kubernetes.io/hostname"


def is_node_preflight(obj: KubeObject) -> bool:
    """Whether `obj` is the set's node-preflight Job."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return obj.get("kind") == "Job" and labels.get(COMPONENT_LABEL) == NODE_PREFLIGHT_COMPONENT


def pinned(job: KubeObject, hosts: list[str]) -> KubeObject:
    """A copy of the node-preflight Job with one pod per host in `hosts`, each pinned to the list."""
    out = copy.deepcopy(job)
    spec = out["spec"]
    spec["parallelism"] = spec["completions"] = len(hosts)
    spec["completionMode"] = "Indexed"
    pod = spec["template"]["spec"]
    term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": list(hosts)}]}
    affinity = {k: v for k, v in (pod.get("affinity") or {}).items() if k != "nodeAffinity"}
    pod["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    pod["affinity"].update(affinity)
    return out


def with_hosts(objects: list[KubeObject], hosts: list[str]) -> list[KubeObject]:
    """The set with its node-preflight Job (if any) pinned to `hosts`."""
    return [pinned(obj, hosts) if is_node_preflight(obj) else obj for obj in objects]
