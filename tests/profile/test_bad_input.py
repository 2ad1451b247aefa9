"""Values no output can hold, flags k3deploy renders itself, and who an error blames: the profile or a --set."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.render.argv import serve_args

K3 = "kimi-k3-gb300-tp16"
ORIGIN = f"built-in profile {K3!r}"


@pytest.mark.parametrize(
    "item",
    [
        "speculative.extra.prompt_lookup_max=.nan",
        "speculative.extra={a: [1, .inf]}",
        "speculative.extra.x=-.inf",
        "vllm.attention_config={backend: x, scale: .nan}",
        "kubernetes.serving_pod_patch={priority: .nan}",
    ],
)
def test_nan_or_infinity_in_a_free_form_field_is_refused(item: str) -> None:
    with pytest.raises(ProfileError, match="is not a finite number") as caught:
        load_profile(K3, [item])
    assert caught.value.exit_code == 2
    assert caught.value.message.startswith(f"--set {item} (on {ORIGIN}) is invalid: ")


def test_nan_in_a_profile_file_is_the_files_not_a_sets(tmp_path: Path) -> None:
    layer = tmp_path / "mine.yaml"
    layer.write_text("speculative:\n  extra: {prompt_lookup_max: .nan}\n")
    with pytest.raises(ProfileError, match=r"speculative\.extra\.prompt_lookup_max: nan is not a finite") as caught:
        load_profile([K3, str(layer)], ["vllm.port=8001"])
    assert caught.value.message.startswith(f"{ORIGIN} + profile file {str(layer)!r} is invalid")


def test_finite_extras_still_render_as_json() -> None:
    profile = load_profile(K3, ["speculative.extra.threshold=0.5"])
    args = serve_args(profile, role="leader")
    assert '"threshold":0.5' in args[args.index("--speculative-config") + 1]


@pytest.mark.parametrize(
    ("sets", "blamed"),
    [
        (["name=null"], "--set name=null"),
        (["vllm.port=8001", "name=null"], "--set name=null"),
        (["vllm={image: 'a/b:1', max_model_len: 0}"], "--set vllm={image: 'a/b:1', max_model_len: 0}"),
        # A section's own check (loc `vllm`) failing because of a --set under it, beside an innocent one.
        (["vllm.extra_args=[--master-port]", "vllm.port=8001"], "--set vllm.extra_args=[--master-port]"),
        # List items set one by one (a number written as text): only the one that broke the section is blamed.
        (
            ["vllm.extra_args[0]=--seed", "vllm.extra_args[1]=1", "vllm.extra_args[2]=--master-port"],
            "--set vllm.extra_args[2]=--master-port",
        ),
    ],
)
def test_a_value_a_set_brought_is_blamed_on_the_set(sets: list[str], blamed: str) -> None:
    with pytest.raises(ProfileError) as caught:
        load_profile(K3, sets)
    assert caught.value.message.startswith(f"{blamed} (on {ORIGIN}) is invalid: "), caught.value.message


def test_a_profiles_own_error_is_not_blamed_on_a_set(tmp_path: Path) -> None:
    layer = tmp_path / "mine.yaml"
    layer.write_text("vllm:\n  extra_args: [--port, '9000']\n")
    with pytest.raises(ProfileError) as caught:
        load_profile([K3, str(layer)], ["vllm.max_num_seqs=8", "name=x"])
    assert caught.value.message.startswith(f"{ORIGIN} + profile file {str(layer)!r} is invalid: vllm: ")


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--master-port"], "needs a TCP port after it"),
        (["--master-port", "--enable-auto-tool-choice"], "needs a TCP port after it"),
        (["--master-port=99999"], "needs a TCP port after it"),
        (["--master-port", "3000", "--master_port=3001"], "names --master-port 2 times"),
        (["--tensor-parallel-size", "8"], "--tensor-parallel-size is a flag k3deploy renders itself"),
        (["--tensor_parallel_size=8"], "--tensor-parallel-size is a flag k3deploy renders itself"),
        (["-tp", "8"], "-tp is a flag k3deploy renders itself (from parallel.tensor_parallel_size)"),
        (["--port=9000"], "--port is a flag k3deploy renders itself (from vllm.port)"),
        (["--headless"], "--headless is a flag k3deploy renders itself"),
        (["--speculative-config", "{}"], "(from speculative)"),
        (["--max-model-len", "1024"], "(from vllm.max_model_len)"),
    ],
)
def test_extra_args_may_not_carry_a_flag_k3deploy_renders(args: list[str], why: str) -> None:
    quoted = ", ".join(f"'{a}'" for a in args)
    with pytest.raises(ProfileError, match="is invalid: vllm: extra_args") as caught:
        load_profile(K3, [f"vllm.extra_args=[{quoted}]"])
    assert why in caught.value.message


@pytest.mark.parametrize("args", [["--master-port", "3000"], ["--master-port=3000"], ["--seed", "1"]])
def test_extra_args_keep_a_master_port_and_other_flags(args: list[str]) -> None:
    quoted = ", ".join(f"'{a}'" for a in args)
    profile = load_profile(K3, [f"vllm.extra_args=[{quoted}]"])
    rendered = serve_args(profile, role="leader")
    assert rendered[-len(args) :] == args


def test_per_request_spec_decode_metrics_need_speculative_decoding_and_one_source() -> None:
    with pytest.raises(ProfileError, match="per_request_spec_decode_metrics requires a speculative section"):
        load_profile(K3, ["vllm.per_request_spec_decode_metrics=summary", "speculative=null"])
    with pytest.raises(ProfileError, match=r"rendered from vllm\.per_request_spec_decode_metrics"):
        load_profile(K3, ["vllm.extra_args=[--per-request-spec-decode-metrics, summary]"])
    with pytest.raises(ProfileError):
        load_profile(K3, ["vllm.per_request_spec_decode_metrics=everything"])
    on = load_profile(K3, ["vllm.per_request_spec_decode_metrics=summary"])
    args = serve_args(on, role="leader")
    assert args[args.index("--per-request-spec-decode-metrics") + 1] == "summary"
