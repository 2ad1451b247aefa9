"""What the serving pods carry beyond vLLM itself: the persistent compile cache, gang admission, the host folders
of kubernetes.host_vllm, and the profile's pod and container patches (escape hatches for what the set does not
model). Pure.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, TypedDict

from k3deploy import kueue
from k3deploy.errors import ProfileError
from k3deploy.kobject import KubeObject
from k3deploy.lws import GROUP_INDEX_LABEL, NAME_LABEL
from k3deploy.profile.model import Profile
from k3deploy.render import pod_security

#: Where the serving container sees its compile cache, and the environment that points each JIT cache there: vLLM's
#: cache root (torch.compile artefacts, Inductor's cache inside it: vllm/envs.py VLLM_CACHE_ROOT) and Triton's kernels
#: (triton/runtime/cache.py TRITON_CACHE_DIR). Not FlashInfer's FLASHINFER_WORKSPACE_BASE: flashinfer/jit/env.py
#: derives both its JIT folder and the fallback cubin folder (FLASHINFER_CACHE_DIR/cubins, where an image's
#: `flashinfer --download-cubin` put them) from it, so moving it would hide pre-seeded cubins and make FlashInfer
#: download them at run time, which the offline pods cannot; it has no variable for the JIT folder alone.
COMPILE_CACHE_MOUNT = "/var/cache/k3deploy-compile"
COMPILE_CACHE_ENV = {
    "VLLM_CACHE_ROOT": f"{COMPILE_CACHE_MOUNT}/vllm",
    "TRITON_CACHE_DIR": f"{COMPILE_CACHE_MOUNT}/triton",
}
#: The environment the compile cache's subPathExpr reads (downward API, from the labels the LWS controller puts on
#: every pod; LWS_WORKER_INDEX it injects itself): one folder per LeaderWorkerSet (colour), group and rank, so two
#: groups or two colours never cold-compile into one folder at once.
COMPILE_CACHE_LABEL_ENV = {"K3DEPLOY_LWS_NAME": NAME_LABEL, "K3DEPLOY_GROUP_INDEX": GROUP_INDEX_LABEL}
#: What every serving container runs with so that nothing phones home from the offline pods: vLLM's usage report
#: (vllm/envs.py VLLM_NO_USAGE_STATS; VLLM_DO_NOT_TRACK also reads the cross-tool DO_NOT_TRACK).
NO_TELEMETRY_ENV = {"VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}


class HostMount(TypedDict):
    """One host folder of kubernetes.host_vllm: its volume's name and its path (the same on the host and in the pod)."""

    name: str
    path: str


class HostMounts(TypedDict):
    """Template context of kubernetes.host_vllm: the model folder and the environment's folders."""

    model_dir: str
    mounts: list[HostMount]


#: The cache's folder on the weight PVC (below the prefetch's own .k3deploy folder).
COMPILE_CACHE_DIR = ".k3deploy/compile-cache"


def compile_cache_key(image: str) -> str:
    """The folder of one image's caches: its digest once pinned (what was compiled for it stays valid for exactly
    it), else `tag-` and a hash of the reference (a tag can move: pin the image for a safe key)."""
    if "@sha256:" in image:
        return image.rsplit("@sha256:", 1)[1][:16]
    return "tag-" + hashlib.sha256(image.encode()).hexdigest()[:16]


def compile_cache(profile: Profile) -> dict[str, Any] | None:
    """Template context of the compile cache (None when kubernetes.compile_cache is off or the weights are a host
    folder, kubernetes.host_vllm: there is no claim to keep it on): the PVC folder shared by
    the prefetch, and the per-LeaderWorkerSet, group and rank subPathExpr the serving pods mount on the weight
    claim's one volume (ranks, groups and colours never write one folder at once)."""
    if not profile.kubernetes.compile_cache or profile.kubernetes.host_vllm is not None:
        return None
    folder = f"{COMPILE_CACHE_DIR}/{compile_cache_key(profile.vllm.image)}"
    label_env: list[KubeObject] = [
        {"name": key, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}
        for key, label in COMPILE_CACHE_LABEL_ENV.items()
    ]
    return {
        "folder": f"{profile.kubernetes.model_cache_path}/{folder}",
        "sub_path_expr": f"{folder}/$(K3DEPLOY_LWS_NAME)/group-$(K3DEPLOY_GROUP_INDEX)/rank-$(LWS_WORKER_INDEX)",
        "mount": COMPILE_CACHE_MOUNT,
        "env": [{"name": key, "value": value} for key, value in sorted(COMPILE_CACHE_ENV.items())] + label_env,
    }


def gang(profile: Profile) -> dict[str, Any]:
    """Template context of gang admission: the mode rendered, labels of the LeaderWorkerSet, annotations of its pod
    templates and the pods' schedulerName."""
    kube = profile.kubernetes
    # `auto` is decided against a cluster (targets/kubernetes/admission.py) before a deploying command renders; a
    # render without one has no Kueue to count on. The mode rendered is recorded on the LeaderWorkerSet.
    mode = "none" if kube.gang_admission == "auto" else kube.gang_admission
    if mode == "kueue":
        return {
            "mode": mode,
            "lws_labels": {kueue.QUEUE_LABEL: kube.kueue_queue},
            "pod_annotations": {kueue.REQUIRED_TOPOLOGY: kube.clique_label, kueue.PODSET_GROUP: profile.name},
            "scheduler_name": None,
        }
    if mode == "volcano":
        return {"mode": mode, "lws_labels": {}, "pod_annotations": {}, "scheduler_name": kube.gang_scheduler_name}
    return {"mode": mode, "lws_labels": {}, "pod_annotations": {}, "scheduler_name": None}


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON Merge Patch: a map merges key by key (null removes the key), anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def patch_serving_pods(lws: KubeObject, profile: Profile) -> None:
    """Apply kubernetes.serving_pod_patch and serving_container_patch to the leader and worker templates, in place;
    refuse a result the Namespace's Pod Security level (kubernetes.pod_security_level) would not admit."""
    kube = profile.kubernetes
    template = lws["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        spec = (
            merge_patch(template[role]["spec"], kube.serving_pod_patch)
            if kube.serving_pod_patch
            else template[role]["spec"]
        )
        if kube.serving_container_patch:
            spec["containers"] = [
                merge_patch(c, kube.serving_container_patch) if c.get("name") == "vllm" else c
                for c in spec["containers"]
            ]
        template[role]["spec"] = spec
        annotations = (template[role].get("metadata") or {}).get("annotations") or {}
        problems = pod_security.violations(kube.pod_security_level, spec, annotations)
        if problems:
            found = "; ".join(f"{rule}: {', '.join(what)}" for rule, what in sorted(problems.items()))
            raise ProfileError(
                f"the serving pods ({role}) break Pod Security {kube.pod_security_level!r}: {found}",
                hint="set kubernetes.pod_security_level: privileged (the Namespace enforces it), or drop it from "
                "kubernetes.serving_pod_patch / serving_container_patch",
            )


def host_vllm_context(profile: Profile) -> HostMounts | None:
    """Template context of kubernetes.host_vllm (None when off): the model folder and each host folder as a volume
    name and path; a ProfileError for a path still unset (machine paths come with `--set`, no profile has them)."""
    host = profile.kubernetes.host_vllm
    if host is None:
        return None
    missing = host.missing()
    if missing:
        raise ProfileError(
            f"{', '.join(missing)} not set: the host paths of the nodes' vLLM environment",
            hint="for example: --set kubernetes.host_vllm.python=$VENV/bin/python "
            "--set kubernetes.host_vllm.model_dir=$MODEL --set 'kubernetes.host_vllm.mounts=[\"$VENV\", ...]'",
        )
    return {
        "model_dir": host.model_dir or "",
        "mounts": [{"name": f"host-{index}", "path": path} for index, path in enumerate(host.mounts)],
    }
