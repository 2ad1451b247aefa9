"""kubernetes.weight_staging: node-local, as rendered: the staging DaemonSet on exactly the serving pods' trays, the
serving pods' pick-weights init container and the links vLLM serves, the Pod Security level it needs; and off (the
default), nothing of it."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.errors import ProfileError
from k3deploy.pod_volumes import repeated_claims
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.render.pod_security import violations
from k3deploy.render.staging import SCRIPT_KEY, STAGING_MOUNT, WEIGHTS_MOUNT
from tests.conftest import run_cli

K3 = "kimi-k3-gb300-tp16"
STAGED = ["kubernetes.weight_staging=node-local", "kubernetes.pod_security_level=privileged"]


def _objects(sets: list[str]) -> list[dict[str, Any]]:
    return [m.obj for m in build(load_profile(K3, sets))]


def _daemonset(objs: list[dict[str, Any]]) -> dict[str, Any]:
    [ds] = [o for o in objs if o["kind"] == "DaemonSet"]
    return ds


def _serving(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    [lws] = [o for o in objs if o["kind"] == "LeaderWorkerSet"]
    return [lws["spec"]["leaderWorkerTemplate"][t]["spec"] for t in ("leaderTemplate", "workerTemplate")]


def _container(spec: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [c for c in spec.get("initContainers", []) + spec["containers"] if c["name"] == name]
    return found


def test_off_by_default_nothing_of_it_is_rendered() -> None:
    objs = _objects([])
    assert not [o for o in objs if o["kind"] == "DaemonSet"]
    for spec in _serving(objs):
        assert "pick-weights" not in [c["name"] for c in spec["initContainers"]]
        assert not [v for v in spec["volumes"] if "hostPath" in v]
        command = _container(spec, "vllm")["command"]
        assert command[:3] == ["vllm", "serve", "moonshotai/Kimi-K3"] and "--revision" in command


def test_node_local_needs_the_privileged_level_and_says_why() -> None:
    with pytest.raises(ProfileError, match="hostPath"):
        load_profile(K3, ["kubernetes.weight_staging=node-local"])
    refused = run_cli("plan", "-p", K3, "--set", "kubernetes.weight_staging=node-local")
    assert refused.returncode == 2 and "Pod Security baseline forbids" in refused.stderr, refused.stderr
    assert [line.split(":")[0] for line in refused.stderr.strip().splitlines()[-2:]] == ["error", "hint"]
    with pytest.raises(ProfileError, match="staging_path"):
        load_profile(K3, [*STAGED, "kubernetes.staging_path=/var/lib"])


@pytest.mark.parametrize("clique", [None, "rack-7.0"])
def test_the_daemonset_lands_on_the_serving_pods_trays_only(clique: str | None) -> None:
    objs = _objects(STAGED + ([f"kubernetes.clique={clique}"] if clique else []))
    pod = _daemonset(objs)["spec"]["template"]["spec"]
    leader = _serving(objs)[0]
    assert pod["nodeSelector"] == leader["nodeSelector"] and pod["tolerations"] == leader["tolerations"]
    if clique:
        assert pod["nodeSelector"]["nvidia.com/gpu.clique"] == clique
    # The serving pods' pod affinity groups by the clique label: a tray without it never takes one.
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": "nvidia.com/gpu.clique", "operator": "Exists"}]}
    assert leader["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == (
        "nvidia.com/gpu.clique"
    )


def test_the_daemonset_stages_in_the_k3deploy_image_and_pulls_the_vllm_image() -> None:
    profile = load_profile(K3, [*STAGED, "kubernetes.staging_max_mb_s=400"])
    pod = _daemonset([m.obj for m in build(profile)])["spec"]["template"]["spec"]
    stage, prepull = pod["containers"]
    assert (stage["image"], prepull["image"]) == (profile.kubernetes.smoke_image, profile.vllm.image)
    assert stage["command"][-2:] == [f"/etc/k3deploy/{SCRIPT_KEY}", "stage"]
    env = {e["name"]: e["value"] for e in stage["env"]}
    assert env["K3DEPLOY_STAGING_MAX_MB_S"] == "400" and env["K3DEPLOY_STAGING"] == STAGING_MOUNT
    [host] = [v for v in pod["volumes"] if "hostPath" in v]
    assert host["hostPath"] == {"path": "/var/lib/k3deploy/weights", "type": "DirectoryOrCreate"}
    mounts = {m["name"]: m for m in stage["volumeMounts"]}
    assert mounts["model-cache"]["readOnly"] is True and not mounts[host["name"]].get("readOnly")
    assert repeated_claims(pod) == []


def test_the_daemonset_needs_privileged_only_for_its_host_folder() -> None:
    objs = _objects(STAGED)
    pod = _daemonset(objs)["spec"]["template"]["spec"]
    assert set(violations("baseline", pod)) == {"host-path-volumes"}
    assert violations("privileged", pod) == {}
    [ns] = [o for o in objs if o["kind"] == "Namespace"]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_the_serving_pods_pick_their_weights_first_and_serve_the_links() -> None:
    objs = _objects(STAGED)
    for spec in _serving(objs):
        names = [c["name"] for c in spec["initContainers"]]
        assert names.index("pick-weights") == names.index("wait-for-weights") + 1
        pick = _container(spec, "pick-weights")
        assert pick["command"][-1] == "pick" and pick["securityContext"]["runAsNonRoot"] is True
        vllm = _container(spec, "vllm")
        command = vllm["command"]
        assert command[:3] == ["vllm", "serve", f"{WEIGHTS_MOUNT}/target"] and "--revision" not in command
        spec_config = command[command.index("--speculative-config") + 1]
        assert f'"model":"{WEIGHTS_MOUNT}/draft"' in spec_config and "revision" not in spec_config
        mounts = {m["mountPath"]: m for m in vllm["volumeMounts"]}
        assert mounts[STAGING_MOUNT]["readOnly"] is True and mounts[WEIGHTS_MOUNT]["readOnly"] is True
        # The weight volume stays mounted (the fallback, the compile cache), still one volume for its claim.
        assert repeated_claims(spec) == [] and "/models" in mounts
        items = next(v for v in spec["volumes"] if v["name"] == "profile")["configMap"]["items"]
        assert SCRIPT_KEY in [i["key"] for i in items]
    [configmap] = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-profile")]
    assert "def pick(" in configmap["data"][SCRIPT_KEY]
