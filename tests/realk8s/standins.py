"""The local images the real nodes run (tests/realk8s/ociimage.py) and the pod specs the tests put on them: every
pod tolerates the real nodes' taint and selects their label, so none lands on a KWOK node and no other pod lands
on a real one."""

from __future__ import annotations

from typing import Any

from tests.realk8s.ociimage import Image
from tests.realk8s.realnode import REAL_NODE_KEY

#: A busybox image under a name no registry serves: nothing can be pulled in its place (`IfNotPresent`).
BUSYBOX = "localhost/realk8s/busybox:1"
STANDIN_IMAGES = [Image(BUSYBOX)]


def on_real_node(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` (a pod spec) with the toleration and node selector of the real nodes."""
    return {
        **spec,
        "nodeSelector": {**spec.get("nodeSelector", {}), REAL_NODE_KEY: "true"},
        "tolerations": [
            *spec.get("tolerations", []),
            {"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"},
        ],
    }


def pod(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A Pod named `name` with `spec`, placed on a real node."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": on_real_node(spec)}


def container(name: str, script: str, **fields: Any) -> dict[str, Any]:
    """A busybox container running `script` with `sh -c`."""
    return {
        "name": name,
        "image": BUSYBOX,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", script],
        **fields,
    }
