"""The node-local weights script (k3deploy/pod_scripts/node_weights.py) on a weight cache the prefetch's own script
filled (with the Hub stand-in, tests/render/hub_stand_in): the DaemonSet's `stage` copies each snapshot with the real
`k3deploy stage`, and `pick` links the tray's copy only when its marker names the pinned commit."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from k3deploy.pod_scripts import node_weights as script
from tests.conftest import REPO_ROOT
from tests.render.test_prefetch_record import COMMIT, FILES, _container, _fetch

TARGET, DRAFT = "moonshotai/Kimi-K3", "Inferact/Kimi-K3-DSpark"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A filled weight cache (refs/main -> COMMIT for both repos), its marker, and the folders of one tray."""
    cache = _fetch(tmp_path, {"commit": COMMIT, "files": {k: v.hex() for k, v in FILES.items()}})
    rendered = {e["name"]: e.get("value") for e in _container()["env"]}
    marker = cache / ".k3deploy" / Path(rendered["K3DEPLOY_PREFETCH_MARKER"]).name
    marker.touch()
    wrapper = tmp_path / "k3deploy"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={REPO_ROOT} exec {sys.executable} -m k3deploy "$@"\n')
    wrapper.chmod(0o755)
    (tmp_path / "weights").mkdir()
    return {
        "HF_HOME": str(cache / "hf"),
        "K3DEPLOY_PREFETCH": rendered["K3DEPLOY_PREFETCH"],
        "K3DEPLOY_PREFETCH_MARKER": str(marker),
        "K3DEPLOY_STAGING": str(tmp_path / "nvme"),
        "K3DEPLOY_STAGING_TIMEOUT_S": "120",
        "K3DEPLOY_WEIGHTS": str(tmp_path / "weights"),
        "K3DEPLOY_TERMINATION_LOG": str(tmp_path / "termination-log"),
        "K3DEPLOY_BIN": str(wrapper),
    }


def _stage(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(script, "_idle", lambda: 0)  # the pod idles once staged; here the run returns
    assert script.stage(env, poll_s=0) == 0


def _picked(env: dict[str, str]) -> tuple[str, dict[str, str]]:
    assert script.pick(env) == 0
    links = {role: os.readlink(Path(env["K3DEPLOY_WEIGHTS"]) / role) for role in script.ROLES}
    return Path(env["K3DEPLOY_TERMINATION_LOG"]).read_text(), links


def _snapshot(env: dict[str, str], repo: str) -> str:
    return os.path.join(script.repo_folder(env["HF_HOME"], repo), "snapshots", COMMIT)


def test_an_unstaged_tray_loads_from_the_weight_volume(env: dict[str, str]) -> None:
    loaded, links = _picked(env)
    assert loaded == script.SHARED
    assert links == {"target": _snapshot(env, TARGET), "draft": _snapshot(env, DRAFT)}


def test_a_staged_tray_loads_its_copy_of_each_repo(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _stage(env, monkeypatch)
    loaded, links = _picked(env)
    assert loaded == script.NODE_LOCAL
    nvme = Path(env["K3DEPLOY_STAGING"])
    assert links == {
        "target": str(nvme / f"moonshotai--Kimi-K3--{COMMIT}"),
        "draft": str(nvme / f"Inferact--Kimi-K3-DSpark--{COMMIT}"),
    }
    for name, data in FILES.items():
        copy = Path(links["target"]) / name
        assert copy.read_bytes() == data and not copy.is_symlink()
    # Staging again (a restarted DaemonSet pod) keeps both copies: neither repo's copy prunes the other's.
    _stage(env, monkeypatch)
    assert _picked(env)[0] == script.NODE_LOCAL


def test_a_copy_whose_marker_names_another_commit_is_not_used(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _stage(env, monkeypatch)
    marker = Path(env["K3DEPLOY_STAGING"]) / f"moonshotai--Kimi-K3--{COMMIT}{script.MARKER_SUFFIX}"
    data = json.loads(marker.read_text())
    marker.write_text(json.dumps({**data, "revision": "d" * 40}))
    loaded, links = _picked(env)
    assert loaded == "target shared volume, draft node-local"
    assert links["target"] == _snapshot(env, TARGET)
    marker.unlink()  # a copy still under way has no marker yet
    assert _picked(env)[1]["target"] == _snapshot(env, TARGET)


def test_without_the_prefetchs_ref_neither_side_guesses(env: dict[str, str]) -> None:
    os.unlink(os.path.join(script.repo_folder(env["HF_HOME"], TARGET), "refs", "main"))
    assert script.pick(env) == script.EXIT_ENVIRONMENT
    assert script.stage(env, poll_s=0) == script.EXIT_ENVIRONMENT
