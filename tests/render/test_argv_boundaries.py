"""render/argv.py's rules pinned at their boundaries (survivors of tests/mutation/run): a group spans nodes from 2
nodes on, and only then do the multi-node defaults apply (1800 s timeouts, no custom all-reduce, no NCCL symmetric
memory, the mnnvl all-reduce backend), a profile's own value always winning; pipeline parallelism is passed from 2
stages on; a CUDA-graph capture size must cover max_num_seqs decodes of 1 + k tokens each, exactly; each optional
flag is passed when its field is set and only then; a worker is headless and only a worker."""

from __future__ import annotations

from typing import Any

import pytest

from k3deploy.errors import ProfileError
from k3deploy.profile import load_profile
from k3deploy.profile.model import Profile
from k3deploy.render import argv
from k3deploy.render.argv import serve_args, serve_command, serve_env

K3 = "kimi-k3-gb300-tp16"


def tweak(base: Profile | None = None, **parts: dict[str, Any]) -> Profile:
    """The K3 profile (or `base`) with fields of its parts (vllm=..., parallel=..., model=...) replaced."""
    p = base or load_profile(K3)
    return p.model_copy(update={name: getattr(p, name).model_copy(update=fields) for name, fields in parts.items()})


def nodes(n: int, **vllm: Any) -> Profile:
    return tweak(parallel={"nodes": n, "tensor_parallel_size": 4 * n}, vllm=vllm)


def flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


# --- one node or several ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "spans"), [(1, False), (2, True), (4, True)])
def test_a_group_spans_nodes_from_two_nodes_on_and_only_then_gets_the_multi_node_defaults(n: int, spans: bool) -> None:
    p = nodes(n)
    assert argv.spans_nodes(p) is spans
    assert argv.distributed_timeout_s(p) == (1800 if spans else None)
    assert argv.custom_all_reduce_disabled(p) is spans
    leader = serve_args(p, role="leader")
    assert flag(leader, "--distributed-timeout-seconds") == ("1800" if spans else None)
    assert ("--disable-custom-all-reduce" in leader) is spans
    assert (flag(leader, "--nnodes") == str(n)) is spans and ("--nnodes" in leader) is spans
    assert (flag(leader, "--node-rank") == argv.NODE_RANK_REF) is spans
    assert (flag(leader, "--master-addr") == argv.LEADER_ADDRESS_REF) is spans
    env = serve_env(p)
    assert env.get("VLLM_USE_NCCL_SYMM_MEM") == ("0" if spans else None)
    assert env.get("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS") == ("1800" if spans else None)
    assert env.get("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC") == ("1800" if spans else None)
    assert (env.get(argv.ALLREDUCE_BACKEND_ENV) == "mnnvl") is spans


@pytest.mark.parametrize("n", [1, 4])
def test_the_profiles_own_values_win_over_the_multi_node_defaults(n: int) -> None:
    p = nodes(
        n,
        distributed_timeout_s=60,
        disable_custom_all_reduce=not argv.spans_nodes(nodes(n)),
        nccl_symm_mem=True,
        execute_model_timeout_s=90,
        nccl_heartbeat_timeout_s=120,
    )
    assert argv.distributed_timeout_s(p) == 60
    assert argv.custom_all_reduce_disabled(p) is (n == 1)
    env = serve_env(p)
    assert env["VLLM_USE_NCCL_SYMM_MEM"] == "1"
    assert env["VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS"] == "90" and env["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] == "120"
    off = serve_env(nodes(n, nccl_symm_mem=False))
    assert off["VLLM_USE_NCCL_SYMM_MEM"] == "0"


def test_a_backend_named_in_vllm_env_is_kept() -> None:
    p = nodes(4, env={argv.ALLREDUCE_BACKEND_ENV: "trtllm"})
    assert serve_env(p)[argv.ALLREDUCE_BACKEND_ENV] == "trtllm"


def test_the_engine_ready_timeout_is_set_for_pods_only_and_the_env_is_sorted() -> None:
    k3 = load_profile(K3)
    env = serve_env(k3)
    assert env["VLLM_ENGINE_READY_TIMEOUT_S"] == str(k3.startup_budget.total_s)
    assert list(env) == sorted(env)
    assert "VLLM_ENGINE_READY_TIMEOUT_S" not in serve_env(load_profile("local-cpu"))


def test_a_local_server_never_gets_the_group_flags_and_only_a_worker_is_headless() -> None:
    p = load_profile(K3)
    local = serve_args(p, role="local")
    assert "--nnodes" not in local and "--node-rank" not in local and "--headless" not in local
    assert flag(local, "--host") == p.local.host
    worker, leader = serve_args(p, role="worker"), serve_args(p, role="leader")
    assert worker[-1] == "--headless" and "--headless" not in leader
    assert flag(leader, "--host") == "0.0.0.0" and flag(worker, "--host") == "0.0.0.0"
    assert flag(serve_args(p, role="leader", host="10.1.2.3"), "--host") == "10.1.2.3"


@pytest.mark.parametrize(("stages", "passed"), [(1, False), (2, True)])
def test_pipeline_parallelism_is_passed_from_two_stages_on(stages: int, passed: bool) -> None:
    args = serve_args(tweak(parallel={"pipeline_parallel_size": stages}), role="leader")
    assert flag(args, "--pipeline-parallel-size") == (str(stages) if passed else None)


# --- each optional flag: passed when set, and only then ---------------------------------------------------------------


def test_optional_flags_follow_their_fields() -> None:
    p = load_profile(K3)
    full = serve_args(p, role="leader")
    assert flag(full, "--revision") == "main" and "--trust-remote-code" in full
    assert flag(full, "--kv-cache-dtype") == "fp8" and flag(full, "--load-format") == "fastsafetensors"
    assert flag(full, "--max-num-seqs") == "512" and "--enable-prefix-caching" in full
    assert flag(full, "--tool-call-parser") == "kimi_k3" and flag(full, "--reasoning-parser") == "kimi_k3"
    assert flag(full, "--attention-config") == argv.canonical_json(p.vllm.attention_config)
    assert flag(full, "--speculative-config") is not None and "--dtype" not in full and "--enforce-eager" not in full
    assert full[-len(p.vllm.extra_args) :] == list(p.vllm.extra_args)
    bare = serve_args(
        tweak(
            model={"revision": None, "trust_remote_code": False, "tool_call_parser": None, "reasoning_parser": None},
            vllm={
                "kv_cache_dtype": "auto",
                "load_format": None,
                "max_num_seqs": None,
                "enable_prefix_caching": None,
                "attention_config": None,
                "dtype": "bfloat16",
                "enforce_eager": True,
                "extra_args": [],
            },
        ).model_copy(update={"speculative": None}),
        role="leader",
    )
    for absent in (
        "--revision",
        "--trust-remote-code",
        "--kv-cache-dtype",
        "--load-format",
        "--max-num-seqs",
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
        "--attention-config",
        "--speculative-config",
        "--tool-call-parser",
        "--reasoning-parser",
    ):
        assert absent not in bare, absent
    assert flag(bare, "--dtype") == "bfloat16" and "--enforce-eager" in bare
    off = serve_args(tweak(vllm={"enable_prefix_caching": False}), role="leader")
    assert "--no-enable-prefix-caching" in off and "--enable-prefix-caching" not in off


def test_the_commands_pod_and_local_forms() -> None:
    p = load_profile(K3)
    assert serve_command(p, role="leader")[:3] == ["vllm", "serve", p.model.id]
    assert serve_command(p, role="worker", model_path="/models/k3")[:3] == ["vllm", "serve", "/models/k3"]
    local = serve_command(p, role="local", model_path="/m", python="/venv/bin/python")
    assert local[:5] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
    assert serve_command(p, role="local")[4] == p.model.id


# --- CUDA-graph coverage of the target concurrency -----------------------------------------------------------------


def graphs(
    size: str | None, seqs: int | None = 64, *, eager: bool = False, k: int | None = 7, eq: bool = False
) -> Profile:
    args = (
        []
        if size is None
        else ([f"--max-cudagraph-capture-size={size}"] if eq else ["--max-cudagraph-capture-size", size])
    )
    p = tweak(vllm={"extra_args": args, "max_num_seqs": seqs, "enforce_eager": eager})
    if k is None:
        return p.model_copy(update={"speculative": None})
    return tweak(p, speculative={"num_speculative_tokens": k})


@pytest.mark.parametrize("eq", [False, True])
def test_a_capture_size_covering_exactly_max_num_seqs_decodes_of_1_plus_k_tokens_passes(eq: bool) -> None:
    argv.check_cudagraph_coverage(graphs(str(64 * 8), eq=eq))  # 512 tokens // 8 a step = 64 decodes
    argv.check_cudagraph_coverage(graphs(str(64 * 8 + 7), eq=eq))


@pytest.mark.parametrize("eq", [False, True])
def test_a_capture_size_one_token_short_of_max_num_seqs_decodes_is_refused(eq: bool) -> None:
    with pytest.raises(ProfileError) as info:
        argv.check_cudagraph_coverage(graphs(str(64 * 8 - 1), eq=eq))  # 511 // 8 = 63 < 64
    assert "only 63 concurrent decodes with 7 draft tokens (8 tokens a step), below vllm.max_num_seqs 64" in (
        info.value.message
    )
    assert "set it to 512, or lower vllm.max_num_seqs to 63" in (info.value.hint or "")
    with pytest.raises(ProfileError):
        serve_args(graphs(str(64 * 8 - 1), eq=eq), role="leader")  # serve_args refuses it too


def test_a_capture_size_covering_no_decode_hints_at_one() -> None:
    with pytest.raises(ProfileError) as info:
        argv.check_cudagraph_coverage(graphs("7"))
    assert "lower vllm.max_num_seqs to 1" in (info.value.hint or "")


@pytest.mark.parametrize(
    "profile",
    [
        graphs("8", k=None),  # no speculative decoding: a step is one token a request, vLLM's own sizing
        graphs(None),  # no capture size: vLLM sizes the graphs itself
        graphs("8", eager=True),  # no graphs at all
        graphs("8", seqs=None),  # no target concurrency
        graphs("lots"),  # not a number: vLLM's parser judges it
    ],
    ids=["no-spec", "no-size", "eager", "no-max-num-seqs", "not-a-number"],
)
def test_the_coverage_rule_applies_only_to_an_explicit_size_with_speculation_graphs_and_a_target(
    profile: Profile,
) -> None:
    argv.check_cudagraph_coverage(profile)


def test_a_trailing_capture_size_flag_without_a_value_is_no_size() -> None:
    p = tweak(vllm={"extra_args": ["--seed", "1", "--max-cudagraph-capture-size"], "max_num_seqs": 64})
    argv.check_cudagraph_coverage(p)
    assert argv._extra_arg(p, "--max-cudagraph-capture-size") is None
    assert argv._extra_arg(p, "--seed") == "1"
    first = tweak(vllm={"extra_args": ["--seed=2", "--seed", "3"]})
    assert argv._extra_arg(first, "--seed") == "2"
    # everything after the first equals sign is the value
    assert argv._extra_arg(tweak(vllm={"extra_args": ["--x=a=b"]}), "--x") == "a=b"
