"""Profile fields that shape the serving pods for a real cluster: timeouts, collectives, tolerations, versions."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.render.argv import serve_command, serve_env
from k3deploy.render.features import dra_semver
from k3deploy.render.manifests import FLOATING_ANNOTATION, build
from k3deploy.render.pod_security import pod_templates
from tests.render.sets import prefetch_name

K3 = "kimi-k3-gb300-tp16"


def _objects(sets: list[str] | None = None) -> dict[str, dict[str, Any]]:
    return {f"{m.kind}/{m.name}": m.obj for m in build(load_profile(K3, sets or []))}


def _pods(objs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    template = objs[f"LeaderWorkerSet/{K3}"]["spec"]["leaderWorkerTemplate"]
    return [template[role]["spec"] for role in ("leaderTemplate", "workerTemplate")]


def _env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}


def _probe_budget_s(pod: dict[str, Any]) -> int:
    probe = pod["containers"][0]["startupProbe"]
    return probe["periodSeconds"] * probe["failureThreshold"]


@pytest.mark.parametrize("budget", [7200, 10800])
def test_engine_ready_timeout_covers_the_startup_probe_budget(budget: int) -> None:
    leader, worker = _pods(_objects([f"kubernetes.startup_probe_budget_s={budget}"]))
    assert _probe_budget_s(leader) == budget
    for pod in (leader, worker):
        assert int(_env(pod)["VLLM_ENGINE_READY_TIMEOUT_S"]) >= _probe_budget_s(leader)


def test_engine_ready_timeout_in_vllm_env_is_refused_as_a_second_source() -> None:
    with pytest.raises(ProfileError) as info:
        load_profile(K3, ["vllm.env.VLLM_ENGINE_READY_TIMEOUT_S='3600'"])
    assert "derived from storage.read_mb_s and storage.compile_allowance_s" in info.value.message


def _flag(command: list[str], flag: str) -> str | None:
    return command[command.index(flag) + 1] if flag in command else None


def test_multi_node_raises_the_distributed_timeout_and_drops_cross_node_ipc_all_reduce() -> None:
    leader, worker = _pods(_objects())
    for pod in (leader, worker):
        command = pod["containers"][0]["command"]
        assert _flag(command, "--distributed-timeout-seconds") == "1800"
        assert "--disable-custom-all-reduce" in command
        assert _env(pod)["VLLM_USE_NCCL_SYMM_MEM"] == "0"


def test_single_node_keeps_vllm_defaults_and_explicit_fields_win() -> None:
    one = load_profile(
        K3,
        [
            "parallel.nodes=1",
            "parallel.tensor_parallel_size=4",
            "model.checkpoint_bytes=1000",
            "speculative.draft_bytes=0",
        ],
        check_fit=False,
    )
    command = serve_command(one, role="leader")
    assert "--distributed-timeout-seconds" not in command and "--disable-custom-all-reduce" not in command
    leader, _ = _pods({f"{m.kind}/{m.name}": m.obj for m in build(one)})
    assert "VLLM_USE_NCCL_SYMM_MEM" not in _env(leader)
    chosen = _pods(
        _objects(["vllm.distributed_timeout_s=3600", "vllm.disable_custom_all_reduce=false", "vllm.nccl_symm_mem=true"])
    )[0]
    command = chosen["containers"][0]["command"]
    assert _flag(command, "--distributed-timeout-seconds") == "3600" and "--disable-custom-all-reduce" not in command
    assert _env(chosen)["VLLM_USE_NCCL_SYMM_MEM"] == "1"


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        (["vllm.env.VLLM_USE_NCCL_SYMM_MEM='1'"], "derived by k3deploy (vllm.nccl_symm_mem)"),
        (["vllm.extra_args=[--disable-custom-all-reduce]"], "rendered from vllm.disable_custom_all_reduce"),
        (["vllm.extra_args=[--distributed-timeout-seconds=60]"], "rendered from vllm.distributed_timeout_s"),
        (["vllm.extra_args=[--distributed_timeout_seconds, '60']"], "rendered from vllm.distributed_timeout_s"),
        (["kubernetes.lws_version=latest"], "'latest' is not a release version"),
        (["kubernetes.tolerations=[{operator: Exists, value: x}]"], "operator Exists takes no value"),
    ],
)
def test_a_knob_has_one_source(sets: list[str], expected: str) -> None:
    with pytest.raises(ProfileError) as info:
        load_profile(K3, sets)
    assert expected in info.value.message


def test_tolerations_are_on_every_gpu_pod() -> None:
    custom = "kubernetes.tolerations=[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}, {key: dedicated, value: llm, effect: NoExecute, toleration_seconds: 300}]"
    for objs, expected in (
        (_objects(), [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]),
        (
            _objects([custom]),
            [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {
                    "key": "dedicated",
                    "operator": "Equal",
                    "value": "llm",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
        ),
    ):
        gpu_pods = [*_pods(objs), objs[f"Job/{K3}-node-preflight"]["spec"]["template"]["spec"]]
        assert [pod["tolerations"] for pod in gpu_pods] == [expected] * 3


@pytest.mark.parametrize("version", ["0.10.0", "v0.9.0", "0.9.0-rc.1"])
def test_lws_restart_policy_is_recreate_group_after_start_on_every_supported_lws(version: str) -> None:
    lws = _objects([f"kubernetes.lws_version={version}"])[f"LeaderWorkerSet/{K3}"]
    assert lws["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupAfterStart"
    assert set(lws["metadata"]["annotations"]) <= {
        "k3deploy/progress-deadline-seconds",
        "k3deploy/gang-admission",
        FLOATING_ANNOTATION,
    }


@pytest.mark.parametrize("version", ["0.8.1", "v0.7.0"])
def test_an_lws_before_0_9_is_refused(version: str) -> None:
    with pytest.raises(ProfileError, match=f"LeaderWorkerSet {version} is older than 0.9.0"):
        _objects([f"kubernetes.lws_version={version}"])


@pytest.mark.parametrize(("version", "num_nodes"), [("0.4.0", 0), ("25.8.1", 0), ("25.12.0", 0), ("25.3.2", 4)])
def test_compute_domain_num_nodes_follows_the_dra_driver(version: str, num_nodes: int) -> None:
    domain = _objects([f"kubernetes.dra_driver_version={version}"])[f"ComputeDomain/{K3}-compute-domain"]
    assert domain["spec"]["numNodes"] == num_nodes


def test_dra_calendar_versions_map_to_semver() -> None:
    assert [dra_semver(v) for v in ("25.3.0", "25.8.1", "25.12.0", "26.4.0", "0.4.1-rc.1")] == [
        (0, 1, 0),
        (0, 2, 0),
        (0, 3, 0),
        (0, 4, 0),
        (0, 4, 1),
    ]


def test_pdb_lets_a_drain_evict_one_pod_at_a_time() -> None:
    assert _objects()[f"PodDisruptionBudget/{K3}"]["spec"]["maxUnavailable"] == 1
    # A loading group is all unready for up to two hours: a drain then evicts it rather than waiting for it.
    assert _objects()[f"PodDisruptionBudget/{K3}"]["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert _objects(["kubernetes.pdb_max_unavailable=0"])[f"PodDisruptionBudget/{K3}"]["spec"]["maxUnavailable"] == 0


def test_service_monitor_carries_the_labels_prometheus_selects_on() -> None:
    labels = _objects(["kubernetes.service_monitor_labels={release: kube-prometheus-stack}"])[f"ServiceMonitor/{K3}"][
        "metadata"
    ]["labels"]
    assert labels["release"] == "kube-prometheus-stack" and labels["app.kubernetes.io/component"] == "metrics"


def test_model_cache_survives_application_deletion_and_prune() -> None:
    pvc = _objects()[f"PersistentVolumeClaim/{K3}-model-cache"]
    options = {o.strip() for o in pvc["metadata"]["annotations"]["argocd.argoproj.io/sync-options"].split(",")}
    assert options == {"Prune=false", "Delete=false"}


def test_prefetch_has_a_deadline() -> None:
    objs = _objects(["kubernetes.prefetch_timeout_s=7200"])
    job = objs[f"Job/{prefetch_name(objs.values())}"]
    assert job["spec"]["activeDeadlineSeconds"] == 7200


def test_no_pod_of_the_set_takes_service_links() -> None:
    """A Service named `vllm` in the namespace injects VLLM_PORT=tcp://..., which vLLM reads as its port setting."""
    objs = [
        m.obj
        for m in build(
            load_profile(K3, ["kubernetes.routing=inference-pool", "kubernetes.gateway_namespace=envoy-gateway-system"])
        )
    ]
    specs = [(where, pod) for where, pod, _ in pod_templates(objs)]
    specs += [(o["metadata"]["name"], o["spec"]["template"]["spec"]) for o in objs if o["kind"] == "Deployment"]
    assert len(specs) == 6
    for where, pod in specs:
        assert pod["enableServiceLinks"] is False, where


def test_a_capture_size_below_the_concurrency_with_drafts_is_a_profile_error() -> None:
    """256 capture tokens with 7 draft tokens (8 a step) give full graphs to 32 decodes, not max_num_seqs 512."""
    with pytest.raises(ProfileError) as refused:
        serve_command(load_profile(K3, ['vllm.extra_args=["--max-cudagraph-capture-size=256"]']), role="leader")
    assert "only 32 concurrent decodes" in str(refused.value) and "512" in str(refused.value)
    assert "4096" in (refused.value.hint or "")
    ok = load_profile(K3, ['vllm.extra_args=["--max-cudagraph-capture-size", "256"]', "vllm.max_num_seqs=32"])
    assert "--max-cudagraph-capture-size" in serve_command(ok, role="leader")
    assert "--max-cudagraph-capture-size" not in serve_command(load_profile(K3), role="leader")


def test_the_cross_node_all_reduce_backend_is_mnnvl_unless_the_profile_names_one() -> None:
    lws = _objects()[f"LeaderWorkerSet/{K3}"]
    env = {
        e["name"]: e.get("value")
        for e in lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["env"]
    }
    assert env["VLLM_FLASHINFER_ALLREDUCE_BACKEND"] == "mnnvl"
    chosen = _objects(["vllm.env.VLLM_FLASHINFER_ALLREDUCE_BACKEND=trtllm"])[f"LeaderWorkerSet/{K3}"]
    leader = chosen["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert {e["name"]: e.get("value") for e in leader["env"]}["VLLM_FLASHINFER_ALLREDUCE_BACKEND"] == "trtllm"


def test_escape_hatches_reach_every_pod_and_container() -> None:
    sets = [
        "kubernetes.routing=inference-pool",
        "kubernetes.gateway_namespace=envoy-gateway-system",
        "kubernetes.priority_class=inference-critical",
    ]
    sets.append('kubernetes.image_pull_secrets=["mirror-pull"]')
    objs = [m.obj for m in build(load_profile(K3, sets))]
    specs = [(where, pod) for where, pod, _ in pod_templates(objs)]
    specs += [(o["metadata"]["name"], o["spec"]["template"]["spec"]) for o in objs if o["kind"] == "Deployment"]
    for where, pod in specs:
        assert pod["imagePullSecrets"] == [{"name": "mirror-pull"}], where
        for container in pod["containers"] + pod.get("initContainers", []):
            # A crash leaves its last log lines in the pod's status, where `kubectl describe` shows them.
            assert container["terminationMessagePolicy"] == "FallbackToLogsOnError", (where, container["name"])
        assert (pod.get("priorityClassName") == "inference-critical") is ("LeaderWorkerSet" in where), where
    plain = [pod for _, pod, _ in pod_templates([m.obj for m in build(load_profile(K3))])]
    assert all("imagePullSecrets" not in pod and "priorityClassName" not in pod for pod in plain)


def test_multi_node_raises_the_step_and_nccl_watchdog_timeouts_and_the_fields_win() -> None:
    """1800 s each, as the vLLM recipe (VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS) and NVIDIA Dynamo's Kimi K3 recipe
    (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC) run a multi-node group; vLLM's 300 s and PyTorch's 480 s otherwise."""
    for pod in _pods(_objects()):
        env = _env(pod)
        assert env["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == "1800"
        assert env["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] == "1800"
    chosen = _pods(_objects(["vllm.execute_model_timeout_s=3600", "vllm.nccl_heartbeat_timeout_s=2400"]))[1]
    assert _env(chosen)["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == "3600"
    assert _env(chosen)["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] == "2400"
    local = serve_env(load_profile("local-cpu"))
    assert "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS" not in local and "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC" not in local
    for key, field in (
        ("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "vllm.execute_model_timeout_s"),
        ("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", "vllm.nccl_heartbeat_timeout_s"),
    ):
        with pytest.raises(ProfileError) as info:
            load_profile(K3, [f"vllm.env.{key}='60'"])
        assert f"derived by k3deploy ({field})" in info.value.message
