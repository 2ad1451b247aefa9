"""The node-preflight Job: `k3deploy preflight --node` once per GB300 node, before anything else is synced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from k3deploy.profile import load_profile
from k3deploy.profile.names import quantity_bytes
from k3deploy.render.manifests import build
from tests.conftest import EXAMPLE_SETS, REPO_ROOT, run_cli
from tests.preflight.fake_nvml import gb300_node
from tests.preflight.test_cli_node import FITS_HERE, use_fake_nvml
from tests.render.kube_schemas import K8S_VERSION
from tests.render.sets import prefetch_name

K3 = "kimi-k3-gb300-tp16"
JOB = f"Job/{K3}-node-preflight"
PROFILE_MAP = f"ConfigMap/{K3}-profile"
HOOK = "argocd.argoproj.io/hook"


def _objects(sets: list[str] | None = None) -> dict[str, dict[str, Any]]:
    pairs = [s for s in (sets or []) if s != "--set"]
    return {f"{m.kind}/{m.name}": m.obj for m in build(load_profile(K3, pairs))}


def _pod(objs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return objs[JOB]["spec"]["template"]["spec"]


def test_job_comes_right_after_the_profile_configmap_and_is_committed() -> None:
    manifests = build(load_profile(K3, ["production=false"]))  # what the committed example set is rendered from
    keys = [f"{m.kind}/{m.name}" for m in manifests]
    assert keys[keys.index(PROFILE_MAP) + 1] == JOB
    job = next(m for m in manifests if f"{m.kind}/{m.name}" == JOB)
    assert job.filename == f"03-job-{K3}-node-preflight.yaml"
    committed = yaml.safe_load((REPO_ROOT / "manifests" / K3 / job.filename).read_text(encoding="utf-8"))
    assert committed == job.obj


def test_job_validates_strictly_against_kubernetes_1_34() -> None:
    assert kubernetes_validate.validate(_objects()[JOB], K8S_VERSION, strict=True) == K8S_VERSION


def test_one_pod_per_node_of_the_group_and_a_failed_check_fails_the_job() -> None:
    spec = _objects()[JOB]["spec"]
    assert (spec["parallelism"], spec["completions"], spec["backoffLimit"]) == (4, 4, 0)
    # No TTL: Flux re-creates a TTL-deleted Job on every reconcile, re-running the check daily on random trays.
    assert "ttlSecondsAfterFinished" not in spec and spec["activeDeadlineSeconds"] == 900
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    two = _objects(["parallel.nodes=2", "parallel.tensor_parallel_size=8"])[JOB]["spec"]
    assert (two["parallelism"], two["completions"]) == (2, 2)
    assert "completionMode" not in spec and "nodeAffinity" not in spec["template"]["spec"]["affinity"]


def test_listed_hosts_make_an_indexed_job_of_one_pod_per_host() -> None:
    # Every eligible node, not any 4: six hosts, six pods, each pinned to the list and spread one per hostname.
    hosts = [f"gb300-{i}" for i in range(6)]
    job = _objects([f"kubernetes.node_preflight_hosts=[{','.join(hosts)}]"])[JOB]
    spec, pod = job["spec"], job["spec"]["template"]["spec"]
    assert (spec["parallelism"], spec["completions"], spec["completionMode"]) == (6, 6, "Indexed")
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}]}
    (spread,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert kubernetes_validate.validate(job, K8S_VERSION, strict=True) == K8S_VERSION


def test_anti_affinity_spreads_its_own_pods_and_placement_matches_the_serving_pods() -> None:
    objs = _objects()
    pod = _pod(objs)
    own_labels = objs[JOB]["spec"]["template"]["metadata"]["labels"]
    assert own_labels == objs[JOB]["metadata"]["labels"]
    assert own_labels["app.kubernetes.io/component"] == "node-preflight"
    assert list(pod["affinity"]) == ["podAntiAffinity"]  # no clique affinity: every tray of every clique is checked
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    selector = term["labelSelector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/instance": K3, "app.kubernetes.io/component": "node-preflight"}
    assert selector.items() <= own_labels.items()
    # The selector matches none of the set's other pods, so it spreads only its own.
    for key, obj in objs.items():
        if key != JOB and obj["kind"] == "Job":
            assert not selector.items() <= obj["spec"]["template"]["metadata"]["labels"].items(), key
    lws = objs[f"LeaderWorkerSet/{K3}"]["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        assert pod["nodeSelector"] == lws[role]["spec"]["nodeSelector"]
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64", "nvidia.com/gpu.product": "NVIDIA-GB300"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for role in ("leaderTemplate", "workerTemplate"):
        assert pod["tolerations"] == lws[role]["spec"]["tolerations"]


def test_sees_the_gpus_through_the_runtime_without_taking_any() -> None:
    objs = _objects()
    pod = _pod(objs)
    (container,) = pod["containers"]
    assert pod["runtimeClassName"] == "nvidia"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
    assert "nvidia.com/gpu" not in json.dumps(container["resources"])
    assert "resourceClaims" not in pod and "claims" not in container["resources"]
    cdi = _objects(["kubernetes.runtime_class=nvidia-cdi"])
    assert _pod(cdi)["runtimeClassName"] == "nvidia-cdi"
    # One field for every GPU pod: the serving pods run under the same runtime class.
    lws = cdi[f"LeaderWorkerSet/{K3}"]["spec"]["leaderWorkerTemplate"]
    assert {lws[role]["spec"]["runtimeClassName"] for role in ("leaderTemplate", "workerTemplate")} == {"nvidia-cdi"}
    default = _objects(["kubernetes.runtime_class=null"])
    assert "runtimeClassName" not in _pod(default)
    assert (
        "runtimeClassName"
        not in default[f"LeaderWorkerSet/{K3}"]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
    )


def test_old_gpu_runtime_class_key_still_loads_as_runtime_class(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO_ROOT / "k3deploy" / "profile" / "builtin" / f"{K3}.yaml").read_text(encoding="utf-8"))
    del data["kubernetes"]["runtime_class"]
    data["kubernetes"]["gpu_runtime_class"] = "nvidia-legacy"
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert load_profile(str(path)).kubernetes.runtime_class == "nvidia-legacy"


def test_shm_check_sees_the_full_size_because_the_memory_limit_does_not_cap_the_emptydir() -> None:
    # kubelet pkg/volume/emptydir/empty_dir.go calculateEmptyDirMemorySize: a memory-backed emptyDir is sized to the
    # smaller of its sizeLimit and the pod's memory limit; the in-pod host.shm check wants the whole kubernetes.shm_size.
    pod = _pod(_objects())
    (container,) = pod["containers"]
    (dshm,) = [v for v in pod["volumes"] if v["name"] == "dshm"]
    size_limit = quantity_bytes(dshm["emptyDir"]["sizeLimit"])
    tmpfs = min(size_limit, quantity_bytes(container["resources"]["limits"]["memory"]))
    assert tmpfs >= quantity_bytes(load_profile(K3).kubernetes.shm_size)


def test_args_read_the_mounted_profile_and_no_host_path() -> None:
    objs = _objects()
    pod = _pod(objs)
    (container,) = pod["containers"]
    assert container["image"] == load_profile(K3).kubernetes.smoke_image == "ghcr.io/k3deploy/k3deploy:0.1.0"
    assert container["args"] == [
        "preflight",
        "--node",
        "--gpus-optional",
        "-p",
        "/etc/k3deploy/profile.yaml",
        "-o",
        "json",
    ]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    profile_path = Path(container["args"][4])
    mount = next(m for m in mounts.values() if m["mountPath"] == str(profile_path.parent))
    assert mount["readOnly"] is True
    config_map = volumes[mount["name"]]["configMap"]
    assert f"ConfigMap/{config_map['name']}" == PROFILE_MAP
    assert config_map["items"] == [{"key": "profile.yaml", "path": profile_path.name}]
    assert profile_path.name in objs[PROFILE_MAP]["data"]
    # The serving pods read the weights from the RWX PVC: the node's own disk is neither mounted nor checked.
    assert "model-cache" not in mounts and not [v for v in volumes.values() if "hostPath" in v]
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
    assert "serviceAccountName" not in pod and pod["automountServiceAccountToken"] is False


def test_the_rendered_args_run_the_node_checks_on_the_configmaps_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Job's argv as the pod runs it, on a healthy GB300 behind the fake NVML; the profile is the ConfigMap's,
    # rendered with weights small enough and the image arch of this machine so the host checks pass here too.
    objs = _objects(FITS_HERE)
    profile_file = tmp_path / "profile.yaml"
    profile_file.write_text(objs[PROFILE_MAP]["data"]["profile.yaml"], encoding="utf-8")
    args = [str(profile_file) if a == "/etc/k3deploy/profile.yaml" else a for a in _pod(objs)["containers"][0]["args"]]
    use_fake_nvml(monkeypatch, gb300_node())
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["profile"] == K3 and report["status"] == "warn"  # the floating `main` revisions
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["gpu.count"]["detail"] == "4 GPU(s) via nvml"
    assert checks["host.cache_disk"]["status"] == "skip" and "PVC" in checks["host.cache_disk"]["detail"]
    assert "host.shm" in checks
    assert not [name for name, c in checks.items() if c["status"] == "fail"]


def test_argo_runs_it_before_the_sync_after_its_profile() -> None:
    objs = _objects()
    job, profile_map = objs[JOB]["metadata"]["annotations"], objs[PROFILE_MAP]["metadata"]["annotations"]
    assert job[HOOK] == profile_map[HOOK] == "PreSync"
    assert job["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
    assert int(profile_map["argocd.argoproj.io/sync-wave"]) < int(job["argocd.argoproj.io/sync-wave"])
    digest = objs[JOB]["spec"]["template"]["metadata"]["annotations"]["k3deploy/profile-sha256"]
    assert digest == objs[f"Job/{K3}-smoke"]["spec"]["template"]["metadata"]["annotations"]["k3deploy/profile-sha256"]


def test_node_preflight_job_false_removes_it_and_the_profile_is_a_plain_object_again() -> None:
    objs = _objects(["kubernetes.node_preflight_job=false"])
    assert JOB not in objs
    assert [k for k in objs if k.startswith("Job/")] == [f"Job/{prefetch_name(objs.values())}", f"Job/{K3}-smoke"]
    assert "annotations" not in objs[PROFILE_MAP]["metadata"]
    kube = load_profile(K3).kubernetes
    assert kube.node_preflight_job is True and kube.gpu_check is True
    # The two switches are apart: the serving pods keep their own check without the Job.
    assert _serving_specs(["kubernetes.node_preflight_job=false"])[0]["initContainers"][0]["name"] == "gpu-check"


def test_the_old_node_preflight_key_sets_both_switches(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO_ROOT / "k3deploy" / "profile" / "builtin" / f"{K3}.yaml").read_text(encoding="utf-8"))
    for key in ("node_preflight_job", "gpu_check"):
        del data["kubernetes"][key]
    data["kubernetes"]["node_preflight"] = False
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    kube = load_profile(str(path)).kubernetes
    assert (kube.node_preflight_job, kube.gpu_check) == (False, False)


def _serving_specs(sets: list[str] | None = None) -> list[dict[str, Any]]:
    lws = _objects(sets)[f"LeaderWorkerSet/{K3}"]
    lwt = lws["spec"]["leaderWorkerTemplate"]
    return [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]]


def test_serving_pods_check_their_gpus_first_in_an_init_container_that_holds_them() -> None:
    """Hardened runtimes ignore NVIDIA_VISIBLE_DEVICES for pods that request no GPU: the serving pods' own first init
    container checks the GPUs and IMEX channel the pod is given (the kubelet hands an init container's devices on to
    the containers after it), with the script the profile ConfigMap ships, in the vLLM image."""
    objs = _objects()
    for spec in _serving_specs():
        first = spec["initContainers"][0]
        assert first["name"] == "gpu-check"
        assert first["command"] == ["python3", "/etc/k3deploy/gpu-check.py"]
        vllm = spec["containers"][0]
        assert first["image"] == vllm["image"] == load_profile(K3).vllm.image
        assert first["resources"]["limits"]["nvidia.com/gpu"] == vllm["resources"]["limits"]["nvidia.com/gpu"]
        assert first["resources"]["claims"] == vllm["resources"]["claims"]
        assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in first.get("env", [])}
        mounts = {m["name"]: m for m in first["volumeMounts"]}
        profile_volume = next(v for v in spec["volumes"] if v["name"] == mounts["profile"]["name"])
        assert profile_volume["configMap"]["name"] == f"{K3}-profile"
        assert profile_volume["configMap"]["items"] == [{"key": "gpu-check.py", "path": "gpu-check.py"}]
    assert "gpu-check.py" in objs[PROFILE_MAP]["data"]
    off = _serving_specs(["kubernetes.gpu_check=false"])
    assert all(c["name"] != "gpu-check" for spec in off for c in spec["initContainers"])
    assert "gpu-check.py" not in _objects(["kubernetes.gpu_check=false"])[PROFILE_MAP]["data"]
    assert JOB in _objects(["kubernetes.gpu_check=false"])


def test_under_gitops_the_job_checks_the_clique_the_group_is_pinned_to() -> None:
    clique = "7c8d0a3e-1b2f-4e5d-9a8b-0c1d2e3f4a5b.1"
    objs = _objects(["--set", f"kubernetes.clique={clique}"])
    assert objs[JOB]["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.clique"] == clique
    for spec in _serving_specs([f"kubernetes.clique={clique}"]):
        assert spec["nodeSelector"]["nvidia.com/gpu.clique"] == clique
    assert "nvidia.com/gpu.clique" not in _pod(_objects())["nodeSelector"]


def test_render_warns_about_an_unpinned_job_and_names_gpu_check_only_when_it_is_on(tmp_path: Path) -> None:
    on = run_cli("render", "-p", K3, *EXAMPLE_SETS, "-o", str(tmp_path / "on"))
    off = run_cli("render", "-p", K3, *EXAMPLE_SETS, "--set", "kubernetes.gpu_check=false", "-o", str(tmp_path / "off"))
    assert on.returncode == off.returncode == 0, on.stderr + off.stderr
    [warned_on] = [line for line in on.stderr.splitlines() if "node-preflight Job checks any" in line]
    [warned_off] = [line for line in off.stderr.splitlines() if "node-preflight Job checks any" in line]
    assert "gpu-check init container checks their own GPUs" in warned_on and "gpu-check" not in warned_off
