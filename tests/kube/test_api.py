"""KubeApi's pure helpers; KubeApi against a real server is tests/realk8s/kube/test_api.py."""

from __future__ import annotations

from k3deploy.kube.api import object_key

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}}


def test_object_key() -> None:
    assert object_key(CM) == "default/ConfigMap/c"
    assert object_key({"kind": "Namespace", "metadata": {"name": "n"}}) == "Namespace/n"
