"""Everything in one namespace, kind by kind: what deciding whether a Namespace may be deleted reads
(rollout/contents.py judges it)."""

from __future__ import annotations

from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort


def namespace_contents(api: KubePort, namespace: str) -> list[tuple[str, list[KubeObject]]]:
    """(kind, items) of every kind the server lists and deletes inside a namespace (its discovery), as listed in
    `namespace`; a K3DeployError naming the kind when one cannot be listed (then nothing may be concluded)."""
    listed: list[tuple[str, list[KubeObject]]] = []
    for api_version, kind, plural in api.namespaced_kinds():
        found = api.look(f"list {plural}", api_version, plural, namespace=namespace) or {}
        listed.append((kind, list(found.get("items") or [])))
    return listed
