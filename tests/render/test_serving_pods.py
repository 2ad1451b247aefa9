"""The serving pods' escape hatches, compile cache and gang admission, as rendered (every path renders the same
objects: `render`, `apply` and `up` all build them from the profile)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.render.pod_security import violations
from k3deploy.render.serving_pods import compile_cache_key, merge_patch
from tests.render.kube_schemas import K8S_VERSION, STRUCTURAL, crd_schema, validator
from tests.render.sets import prefetch_name
from tests.support import crds

K3 = "kimi-k3-gb300-tp16"
DIGEST = "sha256:" + "ab" * 32


def _objects(sets: list[str] | None = None) -> dict[str, dict[str, Any]]:
    return {f"{m.kind}/{m.name}": m.obj for m in build(load_profile(K3, sets or []))}


def _templates(objs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    lws = objs[f"LeaderWorkerSet/{K3}"]["spec"]["leaderWorkerTemplate"]
    return [lws["leaderTemplate"], lws["workerTemplate"]]


def _vllm(template: dict[str, Any]) -> dict[str, Any]:
    [container] = [c for c in template["spec"]["containers"] if c["name"] == "vllm"]
    return container


def test_merge_patch_follows_rfc_7386() -> None:
    target = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge_patch(target, {"a": {"c": [3], "e": None}, "d": None, "f": {"g": 1}}) == {
        "a": {"b": 1, "c": [3]},
        "f": {"g": 1},
    }
    assert target == {"a": {"b": 1, "c": [1, 2]}, "d": 1}  # the input is left alone


def test_container_and_pod_patches_reach_both_templates_with_privileged_namespace() -> None:
    sets = [
        'kubernetes.serving_container_patch={"securityContext": {"capabilities": {"add": ["IPC_LOCK", "SYS_RESOURCE"]}}}',
        'kubernetes.serving_pod_patch={"hostIPC": true}',
        "kubernetes.pod_security_level=privileged",
    ]
    objs = _objects(sets)
    for template in _templates(objs):
        capabilities = _vllm(template)["securityContext"]["capabilities"]
        assert capabilities == {"drop": ["ALL"], "add": ["IPC_LOCK", "SYS_RESOURCE"]}
        assert template["spec"]["hostIPC"] is True
        assert template["spec"]["enableServiceLinks"] is False  # the rest of the spec stays
        for init in template["spec"]["initContainers"]:
            assert "add" not in init["securityContext"]["capabilities"]
    labels = objs["Namespace/kimi-k3"]["metadata"]["labels"]
    assert {labels[f"pod-security.kubernetes.io/{m}"] for m in ("enforce", "warn", "audit")} == {"privileged"}


def test_a_patch_past_the_namespaces_level_is_refused() -> None:
    patch = 'kubernetes.serving_container_patch={"securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}'
    with pytest.raises(ProfileError) as refused:
        _objects([patch])
    assert "break Pod Security 'baseline'" in refused.value.message and "IPC_LOCK" in refused.value.message
    assert "kubernetes.pod_security_level: privileged" in (refused.value.hint or "")


def test_the_default_set_still_meets_baseline_and_carries_no_gang_settings() -> None:
    objs = _objects()
    assert objs["Namespace/kimi-k3"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert "kueue.x-k8s.io/queue-name" not in objs[f"LeaderWorkerSet/{K3}"]["metadata"]["labels"]
    for template in _templates(objs):
        assert violations("baseline", template["spec"], template["metadata"]["annotations"]) == {}
        assert "schedulerName" not in template["spec"]
        assert not any(k.startswith("kueue.x-k8s.io/") for k in template["metadata"]["annotations"])


def test_the_compile_cache_is_on_the_pvc_per_image_digest_set_group_and_rank() -> None:
    image = f"vllm/vllm-openai@{DIGEST}"
    objs = _objects([f"vllm.image={image}"])
    key = compile_cache_key(image)
    assert key == "ab" * 8
    for template in _templates(objs):
        vllm = _vllm(template)
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        claim = volumes["model-cache"]["persistentVolumeClaim"]
        assert claim == {"claimName": f"{K3}-model-cache"}  # one volume; each mount says whether it writes
        [weights, cache] = [m for m in vllm["volumeMounts"] if m["name"] == "model-cache"]
        assert (weights["mountPath"], weights["readOnly"]) == ("/models", True)
        assert cache["subPathExpr"] == (
            f".k3deploy/compile-cache/{key}/$(K3DEPLOY_LWS_NAME)/group-$(K3DEPLOY_GROUP_INDEX)/rank-$(LWS_WORKER_INDEX)"
        )
        assert not cache.get("readOnly")
        env = {e["name"]: e for e in vllm["env"]}
        # Every variable of the subPathExpr but the one LWS injects comes from the pod's own LWS labels.
        assert env["K3DEPLOY_LWS_NAME"]["valueFrom"]["fieldRef"] == {
            "fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/name']"
        }
        assert env["K3DEPLOY_GROUP_INDEX"]["valueFrom"]["fieldRef"] == {
            "fieldPath": "metadata.labels['leaderworkerset.sigs.k8s.io/group-index']"
        }
        assert env["VLLM_CACHE_ROOT"]["value"].startswith(cache["mountPath"])
        assert env["TRITON_CACHE_DIR"]["value"].startswith(cache["mountPath"])
        # FlashInfer's workspace base also holds the image's pre-seeded cubins: it stays where the image put it.
        assert "FLASHINFER_WORKSPACE_BASE" not in env and "FLASHINFER_CUBIN_DIR" not in env
    prefetch = objs[f"Job/{prefetch_name(objs.values())}"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in prefetch["env"]}
    assert env["K3DEPLOY_COMPILE_CACHE"] == f"/models/.k3deploy/compile-cache/{key}"
    assert 'chmod 1777 "$K3DEPLOY_COMPILE_CACHE"' in prefetch["args"][0]
    # A new image digest, a new folder: nothing compiled for another build is reused.
    assert compile_cache_key("vllm/vllm-openai@sha256:" + "cd" * 32) != key
    assert compile_cache_key("vllm/vllm-openai:kimi-k3").startswith("tag-")
    off = _objects(["kubernetes.compile_cache=false"])
    for template in _templates(off):
        assert [m["mountPath"] for m in _vllm(template)["volumeMounts"] if m["name"] == "model-cache"] == ["/models"]
        assert "K3DEPLOY_LWS_NAME" not in {e["name"] for e in _vllm(template)["env"]}


def test_the_serving_containers_run_offline_without_telemetry() -> None:
    for template in _templates(_objects()):
        env = {e["name"]: e.get("value") for e in _vllm(template)["env"]}
        assert (env["VLLM_NO_USAGE_STATS"], env["DO_NOT_TRACK"], env["HF_HUB_OFFLINE"]) == ("1", "1", "1")


def test_kueue_gang_admission_queues_the_set_and_keeps_each_group_in_one_clique() -> None:
    objs = _objects(["kubernetes.gang_admission=kueue", "kubernetes.kueue_queue=gb300"])
    lws = objs[f"LeaderWorkerSet/{K3}"]
    assert lws["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gb300"
    assert lws["metadata"]["annotations"]["k3deploy/gang-admission"] == "kueue"
    for template in _templates(objs):
        annotations = template["metadata"]["annotations"]
        assert annotations["kueue.x-k8s.io/podset-required-topology"] == "nvidia.com/gpu.clique"
        assert annotations["kueue.x-k8s.io/podset-group-name"] == K3
    default_queue = _objects(["kubernetes.gang_admission=kueue"])[f"LeaderWorkerSet/{K3}"]
    assert default_queue["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "k3deploy"


def test_auto_gang_admission_renders_as_none_without_a_cluster_and_records_it() -> None:
    auto = _objects()
    assert load_profile(K3).kubernetes.gang_admission == "auto"
    lws = auto[f"LeaderWorkerSet/{K3}"]
    assert lws["metadata"]["annotations"]["k3deploy/gang-admission"] == "none"
    assert "kueue.x-k8s.io/queue-name" not in lws["metadata"]["labels"]
    assert lws == _objects(["kubernetes.gang_admission=none"])[f"LeaderWorkerSet/{K3}"]


def test_volcano_gang_admission_names_the_scheduler() -> None:
    for template in _templates(_objects(["kubernetes.gang_admission=volcano"])):
        assert template["spec"]["schedulerName"] == "volcano"


@pytest.mark.parametrize(
    "sets",
    [
        ["kubernetes.gang_admission=kueue", "kubernetes.kueue_queue=gb300"],
        ["kubernetes.gang_admission=volcano"],
        [
            'kubernetes.serving_container_patch={"securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}',
            "kubernetes.pod_security_level=privileged",
            "kubernetes.priority_class=inference-critical",
        ],
    ],
    ids=["kueue", "volcano", "patched"],
)
def test_the_variants_validate_against_the_schemas(sets: list[str]) -> None:
    """Each serving pod template as a Pod, strictly against Kubernetes 1.34; the LeaderWorkerSet against the CRD."""
    lws = _objects(sets)[f"LeaderWorkerSet/{K3}"]
    for template in _templates({f"LeaderWorkerSet/{K3}": lws}):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", **template["metadata"]},
            "spec": template["spec"],
        }
        assert kubernetes_validate.validate(pod, K8S_VERSION, strict=True) == K8S_VERSION
    validator(STRUCTURAL["LeaderWorkerSet"]).validate(lws)
    crds.require()
    validator(crd_schema("LeaderWorkerSet", "v1")).validate(lws)
