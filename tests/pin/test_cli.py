"""`k3deploy pin` end to end: the real CLI against the real distribution registry (over TLS) and the test Hub."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from k3deploy.pin.floating import pinnable_fields
from k3deploy.pin.oci import DOCKER_MANIFEST, DOCKER_MANIFEST_LIST
from k3deploy.profile import load_profile
from k3deploy.profile.load import load_raw
from tests.conftest import run_cli
from tests.pin.conftest import DRAFT_SHA, MODEL_SHA
from tests.pin.distribution import Distribution
from tests.pin.hub_server import Hub

PROFILE = "kimi-k3-gb300-tp16"
VLLM = "vllm/vllm-openai:kimi-k3"
SMOKE = "ghcr.io/k3deploy/k3deploy:0.1.0"
PREFETCH = "python:3.12-slim"
EPP = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
POOL = "kubernetes.routing=inference-pool"
#: The prefetch runs vllm.image unless a profile names its own image: these tests name one, a single-arch image.
OWN_PREFETCH = f"kubernetes.prefetch_image={PREFETCH}"


def _publish(registry: Distribution, vllm_arches: list[str], prefix: dict[str, str] | None = None) -> dict[str, str]:
    """Push every image the GB300 set runs, each a different kind; `prefix` (registry -> path) places them as a mirror does."""
    hub, ghcr = (prefix or {}).get("docker.io", ""), (prefix or {}).get("ghcr.io", "")
    return {
        "vllm": registry.push_index(f"{hub}vllm/vllm-openai", "kimi-k3", vllm_arches),
        "smoke": registry.push_index(
            f"{ghcr}k3deploy/k3deploy", "0.1.0", ["amd64", "arm64"], media_type=DOCKER_MANIFEST_LIST
        ),
        # A single-arch image: its platform is only in its config blob.
        "prefetch": registry.push_image(f"{hub}library/python", "3.12-slim", "arm64", DOCKER_MANIFEST),
        "epp": registry.push_index(f"{ghcr}llm-d/llm-d-router-endpoint-picker", "v0.9.0", ["amd64", "arm64"]),
    }


def test_pin_writes_the_profile_with_digests_and_commits(
    pin_env: dict[str, str], registry: Distribution, hub: Hub, tmp_path: Path
) -> None:
    digests = _publish(registry, ["amd64", "arm64"])
    out = tmp_path / "pinned.yaml"
    sets = ["vllm.max_num_seqs=64", POOL, OWN_PREFETCH]
    result = run_cli("pin", "-p", PROFILE, *[a for s in sets for a in ("--set", s)], "-o", str(out), env=pin_env)
    assert result.returncode == 0, result.stderr
    pinned = yaml.safe_load(out.read_text())
    assert pinned["vllm"]["image"] == f"{VLLM}@{digests['vllm']}"
    kube = pinned["kubernetes"]
    assert kube["smoke_image"] == f"{SMOKE}@{digests['smoke']}"
    assert kube["prefetch_image"] == f"{PREFETCH}@{digests['prefetch']}"
    assert kube["epp_image"] == f"{EPP}@{digests['epp']}"
    assert (pinned["model"]["revision"], pinned["speculative"]["revision"]) == (MODEL_SHA, DRAFT_SHA)
    original, _ = load_raw(PROFILE, sets)
    for field in (
        "vllm.image",
        "kubernetes.smoke_image",
        "kubernetes.prefetch_image",
        "kubernetes.epp_image",
        "model.revision",
        "speculative.revision",
    ):
        section, key = field.split(".")
        original[section][key] = pinned[section][key]
    assert pinned == original  # nothing else changed, the --set kept
    assert all(item.pinned for item in pinnable_fields(load_profile(str(out))))
    assert "kubernetes.prefetch_image: python:3.12-slim -> " in result.stderr
    assert "[single-platform image: linux/arm64]" in result.stderr
    assert "index: linux/amd64, linux/arm64/v8; linux/arm64 image sha256:" in result.stderr
    # pin may overwrite its own file, and a pinned profile pins to itself, every digest read again and verified
    again = run_cli("pin", "-p", str(out), "-o", str(out), env=pin_env)
    assert again.returncode == 0, again.stderr
    assert yaml.safe_load(out.read_text()) == pinned


def test_pin_reads_every_image_from_the_profiles_mirrors(
    pin_env: dict[str, str], registry: Distribution, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An air-gapped site: docker.io and ghcr.io copied into one registry under a prefix each."""
    digests = _publish(registry, ["arm64"], prefix={"docker.io": "hub/", "ghcr.io": "ghcr/"})
    monkeypatch.delenv("K3DEPLOY_REGISTRY_URL")
    mirrors = f"kubernetes.registry_mirrors={{docker.io: '{registry.url}/hub', ghcr.io: '{registry.url}/ghcr'}}"
    env = {"HF_ENDPOINT": pin_env["HF_ENDPOINT"]}
    result = run_cli("pin", "-p", PROFILE, "--set", mirrors, "--set", POOL, "--set", OWN_PREFETCH, env=env)
    assert result.returncode == 0, result.stderr
    pinned = yaml.safe_load(result.stdout)
    assert pinned["vllm"]["image"] == f"{VLLM}@{digests['vllm']}"  # the upstream name, the mirror's digest
    assert pinned["kubernetes"]["epp_image"] == f"{EPP}@{digests['epp']}"
    asked = {path for method, path in registry.requests() if method == "GET"}
    assert "/v2/hub/library/python/manifests/3.12-slim" in asked
    assert "/v2/ghcr/k3deploy/k3deploy/manifests/0.1.0" in asked
    # K3DEPLOY_REGISTRY_URL, per registry, overrides the profile's mirror of the registries it names
    elsewhere = {"K3DEPLOY_REGISTRY_URL": f"ghcr.io={registry.url}/nothing-here", **env}
    moved = run_cli("pin", "-p", PROFILE, "--set", mirrors, env=elsewhere)
    assert moved.returncode == 1
    assert "has no nothing-here/k3deploy/k3deploy:0.1.0" in moved.stderr and "copied to the mirror" in moved.stderr


def test_malformed_registry_url_is_a_usage_error(pin_env: dict[str, str]) -> None:
    result = run_cli("pin", "-p", PROFILE, env={**pin_env, "K3DEPLOY_REGISTRY_URL": "docker.io=mirror.example"})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-2:][0].startswith("error: K3DEPLOY_REGISTRY_URL (docker.io):")


def test_pin_to_stdout_by_default(pin_env: dict[str, str], registry: Distribution) -> None:
    digests = _publish(registry, ["arm64"])
    result = run_cli("pin", "-p", PROFILE, env=pin_env)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["vllm"]["image"] == f"{VLLM}@{digests['vllm']}"


def test_image_without_the_nodes_platform_fails(
    pin_env: dict[str, str], registry: Distribution, tmp_path: Path
) -> None:
    _publish(registry, ["amd64"])
    out = tmp_path / "pinned.yaml"
    result = run_cli("pin", "-p", PROFILE, "-o", str(out), env=pin_env)
    assert result.returncode == 1
    assert (
        "error: vllm.image vllm/vllm-openai:kimi-k3 is built for linux/amd64, not linux/arm64"
        " (the nodes' platform): an index without linux/arm64" in result.stderr
    )
    assert "hint:" in result.stderr and not out.exists()


def test_single_platform_image_of_another_arch_fails(pin_env: dict[str, str], registry: Distribution) -> None:
    _publish(registry, ["arm64"])
    registry.push_image("library/python", "3.12-slim", "amd64", DOCKER_MANIFEST)  # the tag moves to an amd64 image
    result = run_cli("pin", "-p", PROFILE, "--set", OWN_PREFETCH, env=pin_env)
    assert result.returncode == 1
    assert "kubernetes.prefetch_image python:3.12-slim is built for linux/amd64" in result.stderr
    assert "a single-platform image, not linux/arm64" in result.stderr


def test_unknown_tag_fails_with_the_registry_error(pin_env: dict[str, str], registry: Distribution) -> None:
    registry.push_index("k3deploy/k3deploy", "0.1.0", ["arm64"])
    result = run_cli("pin", "-p", PROFILE, env=pin_env)
    assert result.returncode == 1
    assert "has no vllm/vllm-openai:kimi-k3 (MANIFEST_UNKNOWN: manifest unknown)" in result.stderr
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


def test_unreachable_hub_exits_3(pin_env: dict[str, str], registry: Distribution) -> None:
    _publish(registry, ["arm64"])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        result = run_cli(
            "pin", "-p", PROFILE, env={**pin_env, "HF_ENDPOINT": f"http://127.0.0.1:{sock.getsockname()[1]}"}
        )
    assert result.returncode == 3 and "cannot reach the Hugging Face Hub" in result.stderr


def test_refuses_to_overwrite_a_file_it_did_not_write(
    pin_env: dict[str, str], registry: Distribution, tmp_path: Path
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


def test_local_profile_has_nothing_to_pin(pin_env: dict[str, str], registry: Distribution, hub: Hub) -> None:
    result = run_cli("pin", "-p", "local-cpu", env=pin_env)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout) == load_raw("local-cpu")[0]
    assert "nothing to pin" in result.stderr and registry.requests() == [] and hub.requests == []


def test_a_renamed_model_repo_is_pinned_under_its_new_name(
    pin_env: dict[str, str], registry: Distribution, hub: Hub
) -> None:
    _publish(registry, ["arm64"])
    hub.renames["moonshotai/Kimi-K3-Old"] = "moonshotai/Kimi-K3"
    result = run_cli("pin", "-p", PROFILE, "--set", "model.id=moonshotai/Kimi-K3-Old", env=pin_env)
    assert result.returncode == 0, result.stderr
    pinned = yaml.safe_load(result.stdout)
    assert (pinned["model"]["id"], pinned["model"]["revision"]) == ("moonshotai/Kimi-K3", MODEL_SHA)
    assert "the repo was renamed: model.id is now moonshotai/Kimi-K3" in result.stderr


def test_a_gated_model_exits_1_with_a_token_hint(pin_env: dict[str, str], registry: Distribution, hub: Hub) -> None:
    _publish(registry, ["arm64"])
    hub.models["moonshotai/Kimi-K3"].gated = True
    result = run_cli("pin", "-p", PROFILE, env=pin_env)
    assert result.returncode == 1
    error, hint = result.stderr.strip().splitlines()[-2:]
    assert error.startswith("error: moonshotai/Kimi-K3 on 127.0.0.1:") and "is gated and no HF_TOKEN is set" in error
    assert hint.startswith("hint: accept the model's terms") and "HF_TOKEN" in hint
