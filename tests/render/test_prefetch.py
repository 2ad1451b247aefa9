"""The prefetch Job: a plain wave -1 Job named after its spec, idempotent by its marker, running the vLLM image's
own huggingface_hub (nothing installed at run time), writing refs/<revision> only after every file is down, as an
identity the profile names (default: the one NFS root-squash maps root to; 0 allowed at baseline), with a write
check before the 1.5 TB download that names the cache's owner and the settings that run as it.

The script is run for real here: the write check as another identity (setpriv drops root to the UID/GID, as the
kubelet's runAsUser does), and the whole script with this venv's huggingface_hub (the library the vLLM image ships)
against the Hub stand-in of tests/pin/hub_server.py, over a cache that holds a commit's files or lacks one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.render.pod_security import violations
from tests.pin.hub_server import Hub, HubModel
from tests.render.sets import prefetch_name

K3 = "kimi-k3-gb300-tp16"
NOBODY = 65534
REPO, COMMIT = "moonshotai/Kimi-K3", "1" * 40


def _job(sets: list[str] | None = None) -> dict[str, Any]:
    objs = [m.obj for m in build(load_profile(K3, sets))]
    name = prefetch_name(objs)
    return next(o for o in objs if o["metadata"]["name"] == name)


def _prefetch(sets: list[str] | None = None) -> dict[str, Any]:
    return dict(_job(sets)["spec"]["template"]["spec"])


def _script() -> str:
    return str(_prefetch()["containers"][0]["args"][0])


def test_a_plain_wave_minus_one_job_named_after_its_spec() -> None:
    job = _job()
    annotations = job["metadata"]["annotations"]
    assert annotations["argocd.argoproj.io/sync-wave"] == "-1"
    assert not any(key.startswith("argocd.argoproj.io/hook") for key in annotations)  # not re-created every sync
    assert job["metadata"]["name"].startswith(f"{K3}-prefetch-")
    assert _job()["metadata"]["name"] == job["metadata"]["name"]  # same spec, same Job: nothing runs again
    moved = _job(["model.revision=" + "a" * 40])["metadata"]["name"]
    assert moved != job["metadata"]["name"]  # new revisions: a new Job, not an immutable-field error
    longest = [m.obj for m in build(load_profile(K3, ["name=" + "k" * 50]))]
    assert len(prefetch_name(longest)) <= 63


def test_it_runs_the_vllm_image_with_nothing_installed_and_xet_at_full_speed() -> None:
    pod = _prefetch()
    container = pod["containers"][0]
    assert container["image"] == load_profile(K3).vllm.image
    assert "pip" not in container["args"][0] and "python:3" not in json.dumps(pod)
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["HF_XET_HIGH_PERFORMANCE"] == "1"
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64"}  # the vLLM image's architecture
    own = _prefetch(["kubernetes.prefetch_image=registry.example/hub-client:1@sha256:" + "a" * 64])
    assert own["containers"][0]["image"].startswith("registry.example/hub-client:1@")
    assert "nodeSelector" not in own and "tolerations" not in own


def test_default_writer_is_the_nfs_squashed_identity_and_a_field() -> None:
    pod = _prefetch()
    sc = pod["securityContext"]
    assert (sc["runAsUser"], sc["runAsGroup"], sc["fsGroup"], sc["runAsNonRoot"]) == (NOBODY, NOBODY, NOBODY, True)
    assert violations("restricted", pod, {}) == {}
    custom = _prefetch(["kubernetes.prefetch_uid=2000", "kubernetes.prefetch_gid=3000"])["securityContext"]
    assert (custom["runAsUser"], custom["runAsGroup"], custom["fsGroup"]) == (2000, 3000, 3000)


def test_root_is_allowed_and_meets_the_namespaces_baseline() -> None:
    pod = _prefetch(["kubernetes.prefetch_uid=0", "kubernetes.prefetch_gid=0"])
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsNonRoot"]) == (0, False)
    assert violations("baseline", pod, {}) == {}
    assert violations("restricted", pod, {})  # what the Namespace does not enforce


def test_the_marker_and_the_write_check_come_before_any_download() -> None:
    script = _script()
    assert script.index('K3DEPLOY_PREFETCH_MARKER" ]; then') < script.index("cannot write the weight cache")
    assert script.index("cannot write the weight cache") < script.index("snapshot_download")


@pytest.fixture
def root_dir() -> Iterator[Path]:
    """A folder the other UID can traverse (pytest's tmp_path sits under a 0700 folder of root's)."""
    path = Path(tempfile.mkdtemp(prefix="k3deploy-prefetch-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def _env(cache: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(cache.parent),
        "HF_HOME": str(cache / "hf"),
        "K3DEPLOY_CACHE_ROOT": str(cache),
        "K3DEPLOY_PREFETCH_MARKER": str(cache / ".k3deploy" / "prefetch-x.done"),
        **extra,
    }


def _run_as_nobody(script: str, cache: Path) -> subprocess.CompletedProcess[str]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the check as another UID")
    head = script[: script.index("python3 - <<'PY'")]  # only the check: the script up to the download
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sh", "-ec", head]
    return subprocess.run(argv, env=_env(cache), capture_output=True, text=True, timeout=30, check=False)


def test_a_cache_the_writer_cannot_write_fails_naming_the_owner_and_the_settings(root_dir: Path) -> None:
    cache = root_dir / "cache"
    cache.mkdir()
    cache.chmod(0o755)  # root's, as an export without root squash that nobody may write
    result = _run_as_nobody(_script(), cache)
    assert result.returncode == 3
    error, hint = result.stderr.strip().splitlines()
    assert error.startswith("error: the prefetch cannot write the weight cache") and error.endswith("owned by 0:0")
    # The settings that run as the owner, with its numbers: a command that works.
    assert "--set kubernetes.prefetch_uid=0 --set kubernetes.prefetch_gid=0" in hint
    assert not (cache / "hf").exists()


def test_a_cache_the_writer_owns_passes_the_check(root_dir: Path) -> None:
    cache = root_dir / "cache"
    cache.mkdir()
    os.chown(cache, NOBODY, NOBODY)
    result = _run_as_nobody(_script(), cache)
    assert result.returncode == 0, result.stderr
    assert not any(p.name.startswith(".k3deploy-write-check") for p in cache.rglob("*"))


@pytest.fixture
def hub() -> Iterator[Hub]:
    server = Hub().start()
    server.models[REPO] = HubModel(refs={"main": COMMIT}, files={"config.json": 2, "model.safetensors": 4})
    yield server
    server.stop()


def _run_script(cache: Path, hub: Hub, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The whole script, `python3` being this venv's (its huggingface_hub is the vLLM image's library)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    python3 = bin_dir / "python3"
    if not python3.exists():  # a wrapper, not a symlink: a venv's python finds its packages by its own path
        python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        python3.chmod(0o755)
    env = _env(
        cache,
        PATH=f"{bin_dir}:{os.environ['PATH']}",
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_TELEMETRY="1",
        K3DEPLOY_PREFETCH=json.dumps([[REPO, "main"]]),
    )
    return subprocess.run(["sh", "-ec", _script()], env=env, capture_output=True, text=True, timeout=120, check=False)


def _snapshot(cache: Path, *files: str) -> Path:
    folder = cache / "hf" / "hub" / f"models--{REPO.replace('/', '--')}"
    for name in files:
        path = folder / "snapshots" / COMMIT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    return folder


def test_the_ref_moves_into_place_only_after_every_file_and_the_marker_last(tmp_path: Path, hub: Hub) -> None:
    cache = tmp_path / "cache"
    folder = _snapshot(cache, "config.json")  # model.safetensors is missing and the stand-in serves no file
    failed = _run_script(cache, hub, tmp_path)
    assert failed.returncode != 0
    assert not (folder / "refs" / "main").exists()  # a restart now cannot resolve main to half a snapshot
    assert (folder / ".k3deploy-staging" / "refs" / "main").read_text() == COMMIT
    assert not (cache / ".k3deploy" / "prefetch-x.done").exists()
    _snapshot(cache, "model.safetensors")
    done = _run_script(cache, hub, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (folder / "refs" / "main").read_text() == COMMIT
    assert not (folder / ".k3deploy-staging" / "refs" / "main").exists()
    assert (cache / ".k3deploy" / "prefetch-x.done").exists()


def test_a_run_that_finds_its_marker_exits_at_once(tmp_path: Path, hub: Hub) -> None:
    cache = tmp_path / "cache"
    (cache / ".k3deploy").mkdir(parents=True)
    (cache / ".k3deploy" / "prefetch-x.done").touch()
    result = _run_script(cache, hub, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "in the cache already" in result.stdout
    assert hub.requests == [] and not (cache / "hf").exists()  # no Hub request, nothing written


def test_the_token_secret_is_optional_and_site_fields_reach_the_prefetch_only() -> None:
    sets = [
        "kubernetes.hf_token_secret.name=hf",
        "kubernetes.hf_endpoint=https://hub-mirror.example.internal",
        "kubernetes.https_proxy=http://proxy.example.internal:3128",
        "kubernetes.no_proxy=.svc,.cluster.local",
    ]
    pod = _prefetch(sets)
    secret = next(v for v in pod["volumes"] if v["name"] == "hf-token")["secret"]
    assert secret["optional"] is True
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["HF_ENDPOINT"] == "https://hub-mirror.example.internal"
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://proxy.example.internal:3128"
    assert env["NO_PROXY"] == ".svc,.cluster.local"
    plain = {e["name"] for e in _prefetch()["containers"][0]["env"]}
    assert not plain & {"HF_ENDPOINT", "HTTPS_PROXY", "NO_PROXY"}
    lws = next(m.obj for m in build(load_profile(K3, sets)) if m.kind == "LeaderWorkerSet")
    serving = {e["name"] for e in lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["env"]}
    assert not serving & {"HF_ENDPOINT", "HTTPS_PROXY"}  # the serving pods run offline
