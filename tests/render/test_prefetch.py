"""The prefetch Job's writer: an identity the profile names (default: the one NFS root-squash maps root to), and a
write check before the 1.5 TB download that fails with the fix named.

The check is run for real here as that identity (setpriv drops root to the UID/GID, as the kubelet's runAsUser
does), against a cache it cannot write and one it can.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build

K3 = "kimi-k3-gb300-tp16"
NOBODY = 65534


def _prefetch(sets: list[str] | None = None) -> dict[str, Any]:
    job = next(m.obj for m in build(load_profile(K3, sets)) if m.kind == "Job" and m.name.endswith("-prefetch"))
    return dict(job["spec"]["template"]["spec"])


def test_default_writer_is_the_nfs_squashed_identity_and_a_field() -> None:
    pod = _prefetch()
    sc = pod["securityContext"]
    assert (sc["runAsUser"], sc["runAsGroup"], sc["fsGroup"]) == (NOBODY, NOBODY, NOBODY)
    custom = _prefetch(["kubernetes.prefetch_uid=2000", "kubernetes.prefetch_gid=3000"])["securityContext"]
    assert (custom["runAsUser"], custom["runAsGroup"], custom["fsGroup"]) == (2000, 3000, 3000)


def test_the_write_check_comes_before_any_download() -> None:
    script = _prefetch()["containers"][0]["args"][0]
    check = script.index("cannot write the weight cache")
    assert check < script.index("pip install") and check < script.index("snapshot_download")


@pytest.fixture
def root_dir() -> Iterator[Path]:
    """A folder the other UID can traverse (pytest's tmp_path sits under a 0700 folder of root's)."""
    path = Path(tempfile.mkdtemp(prefix="k3deploy-prefetch-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def _run_as_nobody(script: str, cache: Path) -> subprocess.CompletedProcess[str]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the check as another UID")
    env = {
        "PATH": os.environ["PATH"],
        "HF_HOME": str(cache / "hf"),
        "K3DEPLOY_PREFETCH_MARKER": str(cache / ".k3deploy" / "prefetch-x.done"),
    }
    # Only the check: the script up to the download.
    head = script[: script.index("pip install")]
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sh", "-ec", head]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)


def test_a_cache_the_writer_cannot_write_fails_naming_the_fix(root_dir: Path) -> None:
    script = _prefetch()["containers"][0]["args"][0]
    cache = root_dir / "cache"
    cache.mkdir()
    cache.chmod(0o755)  # root's, as an NFS export not prepared for the squashed writer
    result = _run_as_nobody(script, cache)
    assert result.returncode != 0
    assert "cannot write the weight cache" in result.stderr and "kubernetes.prefetch_uid" in result.stderr
    assert not (cache / "hf").exists()


def test_a_cache_the_writer_owns_passes_the_check(root_dir: Path) -> None:
    script = _prefetch()["containers"][0]["args"][0]
    cache = root_dir / "cache"
    cache.mkdir()
    os.chown(cache, NOBODY, NOBODY)
    result = _run_as_nobody(script, cache)
    assert result.returncode == 0, result.stderr
    assert not any(p.name.startswith(".k3deploy-write-check") for p in cache.rglob("*"))


def test_the_token_secret_is_optional_and_site_fields_reach_the_prefetch_only() -> None:
    sets = [
        "kubernetes.hf_token_secret.name=hf",
        "kubernetes.hf_endpoint=https://hub-mirror.example.internal",
        "kubernetes.https_proxy=http://proxy.example.internal:3128",
        "kubernetes.no_proxy=.svc,.cluster.local",
        "kubernetes.pip_index_url=https://pypi-mirror.example.internal/simple",
    ]
    pod = _prefetch(sets)
    secret = next(v for v in pod["volumes"] if v["name"] == "hf-token")["secret"]
    assert secret["optional"] is True
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["HF_ENDPOINT"] == "https://hub-mirror.example.internal"
    assert env["PIP_INDEX_URL"] == "https://pypi-mirror.example.internal/simple"
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://proxy.example.internal:3128"
    assert env["NO_PROXY"] == ".svc,.cluster.local"
    plain = {e["name"] for e in _prefetch()["containers"][0]["env"]}
    assert not plain & {"HF_ENDPOINT", "PIP_INDEX_URL", "HTTPS_PROXY", "NO_PROXY"}
    lws = next(m.obj for m in build(load_profile(K3, sets)) if m.kind == "LeaderWorkerSet")
    serving = {e["name"] for e in lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["env"]}
    assert not serving & {"HF_ENDPOINT", "HTTPS_PROXY"}  # the serving pods run offline
