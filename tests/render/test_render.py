"""`k3deploy render`: the committed manifests are its exact output, and the set says what the issue asks."""

from __future__ import annotations

import json
import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from k3deploy.profile import builtin_names, load_profile
from k3deploy.render.argv import serve_command, serve_env
from k3deploy.render.manifests import build
from k3deploy.render.output_dir import RECORD, record_text
from k3deploy.render.templating import render_template, template_dirs
from k3deploy.render.write import files_of, stream_of
from k3deploy.targets.local.launch import plan_launch
from tests.conftest import EXAMPLE_SETS, REPO_ROOT, run_cli
from tests.preflight.test_checks_pinning import PINNED
from tests.profile.test_profile import BAD
from tests.render.sets import builtin_prefetch

K3 = "kimi-k3-gb300-tp16"
PREFETCH = builtin_prefetch(K3)
KUBE_PROFILES = [name for name in builtin_names() if load_profile(name).target == "kubernetes"]
#: The Kubernetes built-ins with a committed example set: not a kubernetes.host_vllm rehearsal, whose render names
#: this machine's folders (profile/host_paths.py derives them at load).
COMMITTED = [name for name in KUBE_PROFILES if load_profile(name).kubernetes.host_vllm is None]


def _objects(sets: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """kind/name -> object of the K3 set."""
    return {f"{m.kind}/{m.name}": m.obj for m in build(load_profile(K3, sets or []))}


def _read_dir(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_every_kubernetes_builtin_has_committed_manifests() -> None:
    assert KUBE_PROFILES == ["cluster-cpu", K3] and COMMITTED == [K3]
    assert sorted(p.name for p in (REPO_ROOT / "manifests").iterdir()) == COMMITTED


@pytest.mark.parametrize("name", COMMITTED)
def test_render_reproduces_the_committed_manifests(name: str, tmp_path: Path) -> None:
    committed = _read_dir(REPO_ROOT / "manifests" / name)
    for attempt in ("first", "second"):
        result = run_cli("render", "-p", name, *EXAMPLE_SETS, "-o", str(tmp_path / attempt))
        assert result.returncode == 0, result.stderr
        assert _read_dir(tmp_path / attempt) == committed, (
            f"manifests/{name} drifted: re-run k3deploy render -p {name} -o manifests/{name}"
        )
    stream = run_cli("render", "-p", name, *EXAMPLE_SETS, "-o", "-")
    assert stream.returncode == 0, stream.stderr
    resources = yaml.safe_load(committed["kustomization.yaml"])["resources"]
    assert sorted(resources) == sorted(set(committed) - {"kustomization.yaml", RECORD})
    # The record of what k3deploy wrote names every file of the set with the digest of its committed bytes.
    texts = {name: data.decode() for name, data in committed.items() if name != RECORD}
    assert committed[RECORD].decode() == record_text(texts)
    assert stream.stdout == "".join("---\n" + committed[f].decode() for f in resources)


def test_stream_parses_to_the_same_objects_as_the_files() -> None:
    profile = load_profile(K3)
    docs = list(yaml.safe_load_all(stream_of(build(profile))))
    files = files_of(build(profile))
    resources = yaml.safe_load(files["kustomization.yaml"])["resources"]
    assert docs == [yaml.safe_load(files[f]) for f in resources]
    assert files_of(build(profile)) == files


def _lws(objs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return objs[f"LeaderWorkerSet/{K3}"]


def test_leaderworkerset_shape_and_argv() -> None:
    profile = load_profile(K3)
    lws = _lws(_objects())
    spec = lws["spec"]
    assert spec["replicas"] == 1 and spec["leaderWorkerTemplate"]["size"] == 4
    assert spec["startupPolicy"] == "LeaderCreated"
    leader = spec["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    worker = spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert leader["command"] == serve_command(profile, role="leader")
    assert worker["command"] == leader["command"] + ["--headless"]
    cmd = leader["command"]
    assert cmd[:3] == ["vllm", "serve", "moonshotai/Kimi-K3"]
    pairs = dict(pairwise(cmd))
    assert pairs["--tensor-parallel-size"] == "16" and pairs["--nnodes"] == "4"
    assert pairs["--node-rank"] == "$(LWS_WORKER_INDEX)" and pairs["--master-addr"] == "$(LWS_LEADER_ADDRESS)"
    assert json.loads(pairs["--speculative-config"]) == {
        "model": "Inferact/Kimi-K3-DSpark",
        "revision": "main",
        "method": "dspark",
        "num_speculative_tokens": 7,
        "attention_backend": "FLASHINFER_MLA",
        "draft_sample_method": "probabilistic",
        "rejection_sample_method": "block",
    }
    assert pairs["--speculative-config"] == json.dumps(
        profile.speculative.config(), sort_keys=True, separators=(",", ":")
    )
    for container in (leader, worker):
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"
        assert container["resources"]["claims"] == [{"name": "compute-domain-channel"}]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert {k: env[k] for k in serve_env(profile)} == serve_env(profile)
        assert env["NCCL_MNNVL_ENABLE"] == "1"
        assert env["HF_HOME"] == "/models/hf" and env["HF_HUB_OFFLINE"] == "1"
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        assert mounts["/dev/shm"]["name"] == "dshm"
        assert mounts["/models"] == {"name": "model-cache", "mountPath": "/models", "readOnly": True}
    assert "startupProbe" not in worker and "readinessProbe" not in worker


def test_pod_placement_probes_and_volumes() -> None:
    objs = _objects()
    for role in ("leaderTemplate", "workerTemplate"):
        pod = _lws(objs)["spec"]["leaderWorkerTemplate"][role]["spec"]
        assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64", "nvidia.com/gpu.product": "NVIDIA-GB300"}
        term = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["topologyKey"] == "nvidia.com/gpu.clique"
        assert term["labelSelector"]["matchLabels"] == {"leaderworkerset.sigs.k8s.io/name": K3}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Gi"}
        # One volume per claim, not readOnly: each mount says whether it writes (tests/render/test_pod_rules.py).
        assert volumes["model-cache"]["persistentVolumeClaim"] == {"claimName": f"{K3}-model-cache"}
        assert pod["resourceClaims"] == [
            {"name": "compute-domain-channel", "resourceClaimTemplateName": f"{K3}-compute-domain-channel"}
        ]
    leader = _lws(objs)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    startup = leader["startupProbe"]
    assert startup["httpGet"] == {"path": "/health", "port": "http"}
    assert startup["periodSeconds"] * startup["failureThreshold"] == load_profile(K3).startup_budget.total_s == 7610
    assert leader["readinessProbe"]["httpGet"]["path"] == "/health"
    assert leader["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]


def test_objects_reference_each_other_consistently() -> None:
    objs = _objects()
    cd = objs[f"ComputeDomain/{K3}-compute-domain"]
    assert cd["spec"]["channel"]["resourceClaimTemplate"]["name"] == f"{K3}-compute-domain-channel"
    assert f"PersistentVolumeClaim/{K3}-model-cache" in objs
    service = objs[f"Service/{K3}-api"]
    # LWS owns a headless Service named after the LeaderWorkerSet (the pods' DNS); ours must not take it.
    assert f"Service/{K3}" not in objs
    # Only leaders a smoke gate marked take traffic (smoke.gate_traffic, on by default).
    assert service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": K3,
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
        "k3deploy/gated": "true",
    }
    ungated = _objects(["smoke.gate_traffic=false"])[f"Service/{K3}-api"]
    assert "k3deploy/gated" not in ungated["spec"]["selector"]
    assert service["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}]
    monitor = objs[f"ServiceMonitor/{K3}"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == "http" and monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    pdb = objs[f"PodDisruptionBudget/{K3}"]
    assert pdb["spec"]["selector"]["matchLabels"] == {"leaderworkerset.sigs.k8s.io/name": K3}
    prefetch = objs[f"Job/{PREFETCH}"]["spec"]["template"]["spec"]
    fetch_env = {e["name"]: e.get("value") for e in prefetch["containers"][0]["env"]}
    assert json.loads(fetch_env["K3DEPLOY_PREFETCH"]) == [
        ["moonshotai/Kimi-K3", "main"],
        ["Inferact/Kimi-K3-DSpark", "main"],
    ]
    inits = _lws(objs)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["initContainers"]
    wait = next(c for c in inits if c["name"] == "wait-for-weights")
    assert wait["env"] == [{"name": "K3DEPLOY_PREFETCH_MARKER", "value": fetch_env["K3DEPLOY_PREFETCH_MARKER"]}]
    smoke = objs[f"Job/{K3}-smoke"]
    assert smoke["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PostSync"
    container = smoke["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/k3deploy/k3deploy:0.1.0"
    assert container["args"] == [
        "smoke",
        "--endpoint",
        f"http://{K3}-api.kimi-k3.svc:8000",
        "-p",
        "/etc/k3deploy/profile.yaml",
        "--wait-ready",
        "7610s",
        "--gate-leaders",
        "-o",
        "json",
    ]
    # The profile path in the args is the ConfigMap's profile key, mounted where the args look for it.
    profile_map = objs[f"ConfigMap/{K3}-profile"]
    assert list(profile_map["data"]) == ["profile.yaml", "gpu-check.py"]  # the second for the serving pods
    volumes = {v["name"]: v for v in smoke["spec"]["template"]["spec"]["volumes"]}
    assert volumes["profile"]["configMap"] == {
        "name": f"{K3}-profile",
        "items": [{"key": "profile.yaml", "path": "profile.yaml"}],
    }
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["profile"] == {"name": "profile", "mountPath": "/etc/k3deploy", "readOnly": True}


def test_every_object_is_labelled_and_namespaced() -> None:
    for key, obj in _objects().items():
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "k3deploy", key
        assert labels["app.kubernetes.io/instance"] == K3 and labels["app.kubernetes.io/part-of"] == K3, key
        assert labels["app.kubernetes.io/name"] == "vllm", key
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] == "kimi-k3", key


def test_hf_token_only_as_secret_ref() -> None:
    def envs(node: Any) -> list[dict[str, Any]]:
        if isinstance(node, dict):
            found = [e for e in node.get("env", []) if isinstance(e, dict)] if isinstance(node.get("env"), list) else []
            return found + [e for v in node.values() for e in envs(v)]
        if isinstance(node, list):
            return [e for v in node for e in envs(v)]
        return []

    objs = _objects()
    # Never an environment variable (it would show in `kubectl describe` and every child process).
    assert not [e for obj in objs.values() for e in envs(obj) if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]]
    # Only the prefetch downloads; the serving pods run offline and do not depend on the Secret.
    prefetch = objs[f"Job/{PREFETCH}"]["spec"]["template"]["spec"]
    secrets = [v for obj in objs.values() for v in json.dumps(obj).split('"secretName"')[1:]]
    assert len(secrets) == 1
    volume = next(v for v in prefetch["volumes"] if "secret" in v)
    assert volume["secret"]["secretName"] == "hf-token" and volume["secret"]["items"] == [
        {"key": "token", "path": "token"}
    ]
    mount = next(m for m in prefetch["containers"][0]["volumeMounts"] if m["name"] == volume["name"])
    assert mount["readOnly"] is True
    token_path = {"name": "HF_TOKEN_PATH", "value": f"{mount['mountPath']}/token"}
    assert [e for obj in objs.values() for e in envs(obj) if e["name"].startswith("HF_TOKEN")] == [token_path]
    assert "HF_TOKEN" not in json.dumps(_lws(objs)) and "hf-token" not in json.dumps(_lws(objs))


def test_huggingface_hub_reads_the_token_file_the_prefetch_names(tmp_path: Path) -> None:
    """The Hub client itself finds the token through HF_TOKEN_PATH (a fresh interpreter: read at import)."""
    import subprocess
    import sys

    env = {
        e["name"]: e.get("value")
        for e in _objects()[f"Job/{PREFETCH}"]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    token = tmp_path / "token"
    token.write_text("hf_k3deploy_test_token\n")
    child_env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_TOKEN_PATH": str(token),
    }
    assert env["HF_TOKEN_PATH"].endswith("/token")
    out = subprocess.run(
        [sys.executable, "-c", "import huggingface_hub; print(huggingface_hub.get_token())"],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.stdout.strip() == "hf_k3deploy_test_token", out.stderr


def test_optional_objects_follow_the_profile() -> None:
    objs = _objects(
        ["kubernetes.service_monitor=false", "kubernetes.compute_domain=false", "kubernetes.hf_token_secret=null"]
    )
    kinds = [o["kind"] for o in objs.values()]
    assert "ServiceMonitor" not in kinds and "ComputeDomain" not in kinds
    pod = _lws(objs)["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    assert "resourceClaims" not in pod and "claims" not in pod["containers"][0]["resources"]
    assert "HF_TOKEN" not in json.dumps(objs)


def test_render_dir_removes_its_stale_files_only(tmp_path: Path) -> None:
    assert run_cli("render", "-p", K3, *EXAMPLE_SETS, "-o", str(tmp_path)).returncode == 0
    (tmp_path / "README.md").write_text("mine\n")
    result = run_cli(
        "render", "-p", K3, *EXAMPLE_SETS, "--set", "kubernetes.service_monitor=false", "-o", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert f"13-servicemonitor-{K3}.yaml" not in names and "README.md" in names
    objects = build(load_profile(K3, [*EXAMPLE_SETS[1:], "kubernetes.service_monitor=false"]))
    assert len(names) == len(objects) + 3  # the objects + kustomization + README + the record


def test_render_into_a_file_is_a_usage_error(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    result = run_cli("render", "-p", K3, *EXAMPLE_SETS, "-o", str(target))
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == f"error: --output {str(target)!r} exists and is not a directory"


def test_local_profile_renders_the_argv_and_env_the_local_target_launches(tmp_path: Path) -> None:
    profile = load_profile("local-cpu")
    host = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "K3DEPLOY_VLLM_PYTHON": "/opt/vllm/bin/python"}
    result = run_cli("render", "-p", "local-cpu", env=host)
    assert result.returncode == 0, result.stderr
    state_dir = tmp_path / "cache" / "k3deploy" / "local-cpu"
    launch = plan_launch(profile, state_dir, "/opt/vllm/bin/python", Path(tempfile.gettempdir()))
    view = yaml.safe_load(result.stdout)
    assert view == {
        "profile": "local-cpu",
        "target": "local",
        "command": launch.argv,
        "env": launch.env,
        "model": str(state_dir / "model"),
        "rehearsal": True,
        "log": str(state_dir / "server.log"),
    }
    assert view["command"][:5] == [
        "/opt/vllm/bin/python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(state_dir / "model"),
    ]
    assert "rehearsal-llama-tiny" not in view["command"][view["command"].index("--speculative-config") + 1]
    assert view["env"]["VLLM_CACHE_ROOT"] == str(state_dir / "vllm-cache")
    # Rendering shows where the model will be generated; it generates nothing and starts nothing.
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(("sets", "expected"), BAD)
def test_bad_profile_render_exits_2_with_one_line_naming_the_field(sets: list[str], expected: str) -> None:
    # Pinned, so production's own refusals (a test-only setting) are what is left to refuse.
    args = [a for s in [*PINNED, *sets] for a in ("--set", s)]
    result = run_cli("render", "-p", K3, *args, "-o", "-")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


def test_templates_use_strict_undefined() -> None:
    assert template_dirs()[-1] == REPO_ROOT / "templates"
    with pytest.raises(jinja2.UndefinedError):
        render_template("namespace.yaml.j2", {"namespace": "x"})


def test_local_profile_into_a_directory(tmp_path: Path) -> None:
    host = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = tmp_path / "out"
    result = run_cli("render", "-p", "local-cpu", "-o", str(out), env=host)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [RECORD, "vllm-server.yaml"]
    assert (out / "vllm-server.yaml").read_text() == run_cli("render", "-p", "local-cpu", env=host).stdout
    assert not (tmp_path / "cache").exists()


def test_strings_with_characters_yaml_does_not_take_raw_render_exactly() -> None:
    odd = "a\x7fb\x85c\u2028d\x9fe\ufffe"
    objs = _objects([f"model.served_name={json.dumps(odd)}"])  # JSON escapes make it a YAML double-quoted string
    leader = _lws(objs)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    command = leader["command"]
    assert command[command.index("--served-model-name") + 1] == odd


def test_the_smoke_job_waits_for_health_and_its_deadline_covers_the_wait() -> None:
    """An Argo CD PostSync hook can start before the model has loaded: the Job waits, within its own deadline."""
    for sets, ready_s in (([], 7610), (["smoke.ready_timeout_s=600", "smoke.overall_timeout_s=900"], 600)):
        job = _objects(sets)[f"Job/{K3}-smoke"]
        args = job["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--wait-ready") + 1] == f"{ready_s}s"
        overall = 900 if sets else 3600
        assert job["spec"]["activeDeadlineSeconds"] > ready_s + overall
