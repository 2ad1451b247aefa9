"""The cluster-cpu render (kubernetes.host_vllm): one serving pod that runs the nodes' interpreter on the model
folder, with every host folder mounted read-only at its own path, and nothing a GPU set needs (claim, prefetch,
GPU request, GPU check, clique affinity, the weights wait)."""

from __future__ import annotations

from typing import Any

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build

SETS = [
    "kubernetes.host_vllm.python=/opt/env/bin/python",
    'kubernetes.host_vllm.mounts=["/opt/env", "/opt/python"]',
    "kubernetes.host_vllm.model_dir=/srv/model",
]


def _leader() -> tuple[list[str], dict[str, Any]]:
    objects = [m.obj for m in build(load_profile("cluster-cpu", SETS))]
    kinds = sorted({o["kind"] for o in objects})
    (lws,) = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
    return kinds, lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]


def test_the_pod_runs_the_nodes_interpreter_on_the_model_folder() -> None:
    _, spec = _leader()
    (vllm,) = spec["containers"]
    command = vllm["command"]
    assert command[:5] == ["/opt/env/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/models"]
    # The model drafts for itself: the draft is the same folder.
    assert command[command.index("--speculative-config") + 1] == (
        '{"method":"draft_model","model":"/models","num_speculative_tokens":3}'
    )


def test_the_host_folders_are_mounted_read_only_at_their_own_paths() -> None:
    _, spec = _leader()
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["name"]: m for m in spec["containers"][0]["volumeMounts"]}
    assert volumes["model-cache"]["hostPath"] == {"path": "/srv/model", "type": "Directory"}
    assert mounts["model-cache"] == {"name": "model-cache", "mountPath": "/models", "readOnly": True}
    for name, path in (("host-0", "/opt/env"), ("host-1", "/opt/python")):
        assert volumes[name]["hostPath"] == {"path": path, "type": "Directory"}
        assert mounts[name] == {"name": name, "mountPath": path, "readOnly": True}


def test_nothing_a_gpu_set_needs_is_rendered() -> None:
    kinds, spec = _leader()
    assert "PersistentVolumeClaim" not in kinds and "ComputeDomain" not in kinds
    assert "initContainers" not in spec and "affinity" not in spec and "runtimeClassName" not in spec
    assert spec["containers"][0]["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}}
    assert spec["nodeSelector"] == {"kubernetes.io/arch": "amd64"}
