"""Profile loading, overrides and validation: each bad profile gives exit 2 and one line naming the field."""

from __future__ import annotations

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import builtin_names, load_profile
from tests.conftest import run_cli


def test_builtins_load() -> None:
    assert {"kimi-k3-gb300-tp16", "local-cpu"} <= set(builtin_names())
    prof = load_profile("kimi-k3-gb300-tp16")
    assert prof.parallel.tensor_parallel_size == 16 == prof.parallel.nodes * prof.parallel.gpus_per_node
    assert prof.speculative is not None
    assert prof.speculative.config() == {
        "model": "Inferact/Kimi-K3-DSpark",
        "method": "dspark",
        "num_speculative_tokens": 7,
        "attention_backend": "FLASHINFER_MLA",
        "draft_sample_method": "probabilistic",
        "rejection_sample_method": "block",
        "revision": "main",
    }
    assert prof.targets.decode_tok_s == 370 and prof.targets.peak_decode_tok_s == 464


def test_set_override_parses_yaml_values() -> None:
    prof = load_profile("kimi-k3-gb300-tp16", ["vllm.gpu_memory_utilization=0.9", "smoke.concurrency=[1,4]"])
    assert prof.vllm.gpu_memory_utilization == 0.9
    assert prof.smoke.concurrency == [1, 4]


BAD = [
    (["parallel.tensor_parallel_size=8"], "parallel: tensor_parallel_size (8)"),
    (["speculative.num_speculative_tokens=17"], "speculative.num_speculative_tokens: must be between 1 and 16"),
    (["speculative.num_speculative_tokens=0"], "speculative.num_speculative_tokens: must be between 1 and 16"),
    (["speculative.rejection_sample_method=synthetic"], "'synthetic' is a test mode"),
    (["vllm.max_model_len=2097152"], "above the model's context_length"),
    (["name=Kimi_K3"], "name: 'Kimi_K3' is not a DNS-1123 label"),
    (["name=" + "k" * 51], "is 51 characters, above 50: the LeaderWorkerSet's worker StatefulSet"),
    (["name=" + "k" * 50, "parallel.replicas=11"], "is 50 characters, above 49"),
    (["vllm.image=vllm/vllm-openai"], "vllm.image: image 'vllm/vllm-openai' has no tag or digest"),
    (["model.checkpoint_bytes=9000000000000"], "weights do not fit"),
    (["vllm.bogus=1"], "vllm.bogus: unknown field"),
    (["kubernetes.namespace=Bad_NS"], "kubernetes.namespace: 'Bad_NS' is not a DNS-1123 label"),
    (["kubernetes.namespace=" + "n" * 64], "kubernetes.namespace: '" + "n" * 64 + "' is not a DNS-1123 label"),
    (["parallel.nodes=four"], "parallel.nodes: Input should be a valid integer"),
    # Every name that reaches a file name or an object name, with Kubernetes' own grammar.
    (["kubernetes.service_account=a/../../x"], "kubernetes.service_account: 'a/../../x' is not a DNS-1123 subdomain"),
    (["kubernetes.service_account=Not_Valid"], "kubernetes.service_account: 'Not_Valid' is not a DNS-1123 subdomain"),
    (["kubernetes.service_account=" + "a" * 254], "is not a DNS-1123 subdomain"),
    (["kubernetes.storage_class=Fast SSD"], "kubernetes.storage_class: 'Fast SSD' is not a DNS-1123 subdomain"),
    (["kubernetes.runtime_class=nvidia/"], "kubernetes.runtime_class: 'nvidia/' is not a DNS-1123 subdomain"),
    (
        ["kubernetes.hf_token_secret.name=../token"],
        "kubernetes.hf_token_secret.name: '../token' is not a DNS-1123 subdomain",
    ),
    (["kubernetes.hf_token_secret.key=a/b"], "kubernetes.hf_token_secret.key: 'a/b' is not a Secret key"),
    (
        ["kubernetes.clique_label=nvidia.com/gpu clique"],
        "kubernetes.clique_label: 'nvidia.com/gpu clique' is not a label key",
    ),
    (["kubernetes.node_selector={Bad/Key/x: v}"], "kubernetes.node_selector: key 'Bad/Key/x' is not a label key"),
    (["kubernetes.node_selector={ok: not ok}"], "kubernetes.node_selector.ok: 'not ok' is not a label value"),
    (["hardware.gfd_product_label=NVIDIA GB300"], "hardware.gfd_product_label: 'NVIDIA GB300' is not a label value"),
    (["vllm.env={'A=B': x}"], "vllm.env: key 'A=B' is not an environment variable name"),
    (["vllm.env={'': x}"], "vllm.env: key '' is not an environment variable name"),
    # Resource quantities with quantity.go's grammar.
    (["kubernetes.memory_request=lots"], "kubernetes.memory_request: 'lots' is not a Kubernetes quantity"),
    (["kubernetes.memory_request=512GB"], "kubernetes.memory_request: '512GB' is not a Kubernetes quantity"),
    (["kubernetes.cpu_request=-1"], "kubernetes.cpu_request: '-1' is negative"),
    (["kubernetes.shm_size=64 Gi"], "kubernetes.shm_size: '64 Gi' is not a Kubernetes quantity"),
    (["kubernetes.model_cache_size=0"], "kubernetes.model_cache_size: '0' must be above 0"),
    # Images: a tag or a digest, with distribution/reference's grammar.
    (
        ["kubernetes.smoke_image=ghcr.io/k3deploy/k3deploy"],
        "kubernetes.smoke_image: image 'ghcr.io/k3deploy/k3deploy' has no tag or digest",
    ),
    (["kubernetes.prefetch_image=python"], "kubernetes.prefetch_image: image 'python' has no tag or digest"),
    (["vllm.image=Vllm/Vllm:latest"], "vllm.image: image 'Vllm/Vllm:latest' is not a valid image reference"),
    (
        ["kubernetes.endpoint_override=http://127.0.0.1:99999"],
        "kubernetes.endpoint_override: 'http://127.0.0.1:99999' is not a valid URL",
    ),
]


@pytest.mark.parametrize(("sets", "expected"), BAD)
def test_bad_profile_is_a_profile_error(sets: list[str], expected: str) -> None:
    with pytest.raises(ProfileError) as info:
        load_profile("kimi-k3-gb300-tp16", sets)
    assert expected in info.value.message
    assert "\n" not in info.value.message


def test_bad_profile_cli_exit_2_one_line_no_traceback() -> None:
    result = run_cli("plan", "-p", "kimi-k3-gb300-tp16", "--set", "parallel.tensor_parallel_size=8")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith(
        "error: --set parallel.tensor_parallel_size=8 (on built-in profile 'kimi-k3-gb300-tp16') is invalid: parallel"
    )
    assert lines[1].startswith("hint: ")
    assert "Traceback" not in result.stderr


def test_unknown_profile_and_bad_yaml(tmp_path) -> None:
    result = run_cli("plan", "-p", "no-such-profile")
    assert result.returncode == 2 and "neither a built-in profile nor a file" in result.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n  model: [\n")
    result = run_cli("plan", "-p", str(bad))
    assert result.returncode == 2 and "is not valid YAML at line" in result.stderr


def test_synthetic_allowed_outside_production() -> None:
    prof = load_profile("kimi-k3-gb300-tp16", ["production=false", "speculative.rejection_sample_method=synthetic"])
    assert prof.speculative is not None and prof.speculative.rejection_sample_method == "synthetic"


GOOD = [
    "kubernetes.service_account=smoke.runner-1",
    "kubernetes.storage_class=fast.ssd",
    "kubernetes.memory_request=1536Mi",
    "kubernetes.cpu_request=500m",
    "kubernetes.shm_size=0",
    "kubernetes.model_cache_size=1.5Ti",
    "kubernetes.node_selector={example.com/Pool_A: gpu.v1, plain: ''}",
    "kubernetes.smoke_image=registry.local:5000/k3deploy@sha256:" + "a" * 64,
    "kubernetes.endpoint_override=http://[::1]:8000",
]


def test_valid_names_quantities_and_images_load() -> None:
    prof = load_profile("kimi-k3-gb300-tp16", GOOD)
    assert prof.kubernetes.node_selector == {"example.com/Pool_A": "gpu.v1", "plain": ""}
    assert prof.kubernetes.cpu_request == "500m" and prof.kubernetes.model_cache_size == "1.5Ti"


def test_the_name_bound_is_what_the_lws_controller_derives() -> None:
    """Worker StatefulSet `<name>-<group>`; its pods' controller-revision-hash label is that plus `-<10-char hash>`."""
    from k3deploy.lws import max_name_length, name_length_reason

    name = "k" * max_name_length(1)
    assert len(f"{name}-0-{'h' * 10}") == 63
    assert load_profile("kimi-k3-gb300-tp16", [f"name={name}"]).name == name
    assert max_name_length(1, blue_green=True) == 44
    reason = name_length_reason("k" * 45, 1, blue_green=True)
    assert reason is not None and f"{'k' * 45}-green-0" in reason
