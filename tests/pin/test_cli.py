"""`k3deploy pin` end to end: the real CLI in a subprocess against the test registry and Hub."""

from __future__ import annotations

import socket
from pathlib import Path

import yaml

from k3deploy.pin.floating import pinnable_fields
from k3deploy.profile import load_profile
from k3deploy.profile.load import load_raw
from tests.conftest import run_cli
from tests.pin.conftest import DRAFT_SHA, MODEL_SHA
from tests.pin.hub_server import Hub
from tests.pin.registry_server import DOCKER_LIST, Registry

PROFILE = "kimi-k3-gb300-tp16"
VLLM = "vllm/vllm-openai:kimi-k3-aarch64-cu130"
SMOKE = "ghcr.io/k3deploy/k3deploy:0.1.0"


def _publish(registry: Registry, vllm_arches: list[str]) -> tuple[str, str]:
    vllm = registry.push_index("vllm/vllm-openai", "kimi-k3-aarch64-cu130", vllm_arches)
    smoke = registry.push_index("k3deploy/k3deploy", "0.1.0", ["amd64", "arm64"], media_type=DOCKER_LIST)
    # The prefetch Job's image: a one-component Docker Hub name, under library/.
    registry.push_index("library/python", "3.12-slim", ["amd64", "arm64"], media_type=DOCKER_LIST)
    return vllm, smoke


def test_pin_writes_the_profile_with_digests_and_commits(
    pin_env: dict[str, str], registry: Registry, hub: Hub, tmp_path: Path
) -> None:
    vllm, smoke = _publish(registry, ["amd64", "arm64"])
    out = tmp_path / "pinned.yaml"
    result = run_cli("pin", "-p", PROFILE, "--set", "vllm.max_num_seqs=64", "-o", str(out), env=pin_env)
    assert result.returncode == 0, result.stderr
    pinned = yaml.safe_load(out.read_text())
    assert pinned["vllm"]["image"] == f"{VLLM}@{vllm}"
    assert pinned["kubernetes"]["smoke_image"] == f"{SMOKE}@{smoke}"
    assert (pinned["model"]["revision"], pinned["speculative"]["revision"]) == (MODEL_SHA, DRAFT_SHA)
    # Every image the set runs is pinned, the prefetch Job's too (its default is not written in the profile).
    assert pinned["kubernetes"]["prefetch_image"].startswith("python:3.12-slim@sha256:")
    original, _ = load_raw(PROFILE, ["vllm.max_num_seqs=64"])
    fields = (
        "vllm.image",
        "kubernetes.smoke_image",
        "kubernetes.prefetch_image",
        "model.revision",
        "speculative.revision",
    )
    for field in fields:
        section, key = field.split(".")
        original[section][key] = pinned[section][key]
    assert pinned == original  # nothing else changed, the --set kept
    assert all(item.pinned for item in pinnable_fields(load_profile(str(out))))
    assert "linux/arm64/v8" in result.stderr
    # pin may overwrite its own file
    assert run_cli("pin", "-p", PROFILE, "-o", str(out), env=pin_env).returncode == 0


def test_pin_to_stdout_by_default(pin_env: dict[str, str], registry: Registry) -> None:
    vllm, _ = _publish(registry, ["arm64"])
    result = run_cli("pin", "-p", PROFILE, env=pin_env)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["vllm"]["image"] == f"{VLLM}@{vllm}"


def test_image_without_the_nodes_platform_fails(pin_env: dict[str, str], registry: Registry, tmp_path: Path) -> None:
    _publish(registry, ["amd64"])
    out = tmp_path / "pinned.yaml"
    result = run_cli("pin", "-p", PROFILE, "-o", str(out), env=pin_env)
    assert result.returncode == 1
    assert (
        "error: vllm.image vllm/vllm-openai:kimi-k3-aarch64-cu130 is built for linux/amd64, not linux/arm64"
        in result.stderr
    )
    assert "hint:" in result.stderr and not out.exists()


def test_unknown_tag_fails_with_the_registry_error(pin_env: dict[str, str], registry: Registry) -> None:
    registry.push_index("k3deploy/k3deploy", "0.1.0", ["arm64"])
    result = run_cli("pin", "-p", PROFILE, env=pin_env)
    assert result.returncode == 1
    assert "MANIFEST_UNKNOWN" in result.stderr or "NAME_UNKNOWN" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_registry_exits_3_naming_the_host(pin_env: dict[str, str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        result = run_cli("pin", "-p", PROFILE, env={**pin_env, "K3DEPLOY_REGISTRY_URL": url})
    assert result.returncode == 3
    lines = result.stderr.strip().splitlines()
    assert lines[-2].startswith(f"error: cannot reach registry {url.removeprefix('http://')}") and lines[-1].startswith(
        "hint:"
    )


def test_unreachable_hub_exits_3(pin_env: dict[str, str], registry: Registry) -> None:
    _publish(registry, ["arm64"])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        result = run_cli(
            "pin", "-p", PROFILE, env={**pin_env, "HF_ENDPOINT": f"http://127.0.0.1:{sock.getsockname()[1]}"}
        )
    assert result.returncode == 3 and "cannot reach the Hugging Face Hub" in result.stderr


def test_refuses_to_overwrite_a_file_it_did_not_write(
    pin_env: dict[str, str], registry: Registry, tmp_path: Path
) -> None:
    _publish(registry, ["arm64"])
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: my-notes\n")
    refused = run_cli("pin", "-p", PROFILE, "-o", str(mine), env=pin_env)
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert mine.read_text() == "name: my-notes\n"
    forced = run_cli("pin", "-p", PROFILE, "-o", str(mine), "--force", env=pin_env)
    assert forced.returncode == 0 and yaml.safe_load(mine.read_text())["name"] == PROFILE
    link = tmp_path / "link.yaml"
    link.symlink_to(mine)  # points at a file pin wrote: still not written through without --force
    through = run_cli("pin", "-p", PROFILE, "-o", str(link), env=pin_env)
    assert through.returncode == 2 and "symbolic link" in through.stderr


def test_local_profile_has_nothing_to_pin(pin_env: dict[str, str], registry: Registry, hub: Hub) -> None:
    result = run_cli("pin", "-p", "local-cpu", env=pin_env)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout) == load_raw("local-cpu")[0]
    assert "nothing to pin" in result.stderr and registry.requests == [] and hub.requests == []
