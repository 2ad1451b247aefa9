"""Which vLLM flags `vllm.extra_args` may not carry, and the one it may carry that k3deploy reads. Pure.

render/argv.py's serve_args writes the flags of MANAGED_FLAGS itself from profile fields; a second copy in
vllm.extra_args would render beside it (vLLM's parser keeps the last one, while the capacity plan and the checks
read the field). `--master-port` stays the user's (vLLM's default 29501 otherwise), but render/network.py opens
that port between a group's pods, so it must name one port, once.
"""

from __future__ import annotations

#: Every other flag render/argv.py's serve_args writes itself, and what it writes it from: a second copy in
#: vllm.extra_args would render beside it (vLLM's parser keeps the last; the plan and the checks read the field).
MANAGED_FLAGS = {
    "--model": "model.id",
    "--revision": "model.revision",
    "--served-model-name": "model.served_name",
    "--trust-remote-code": "model.trust_remote_code",
    "--tool-call-parser": "model.tool_call_parser",
    "--reasoning-parser": "model.reasoning_parser",
    "--tensor-parallel-size": "parallel.tensor_parallel_size",
    "-tp": "parallel.tensor_parallel_size",
    "--pipeline-parallel-size": "parallel.pipeline_parallel_size",
    "-pp": "parallel.pipeline_parallel_size",
    "--nnodes": "parallel.nodes",
    "--node-rank": "the pod's place in its group",
    "--master-addr": "the group's leader address",
    "--headless": "the worker pods' role",
    "--host": "the target (0.0.0.0 in a pod, local.host here)",
    "--port": "vllm.port",
    "--max-model-len": "vllm.max_model_len",
    "--kv-cache-dtype": "vllm.kv_cache_dtype",
    "--gpu-memory-utilization": "vllm.gpu_memory_utilization",
    "--dtype": "vllm.dtype",
    "--load-format": "vllm.load_format",
    "--max-num-seqs": "vllm.max_num_seqs",
    "--enable-prefix-caching": "vllm.enable_prefix_caching",
    "--no-enable-prefix-caching": "vllm.enable_prefix_caching",
    "--enforce-eager": "vllm.enforce_eager",
    "--attention-config": "vllm.attention_config",
    "--speculative-config": "speculative",
}
#: The one flag of vllm.extra_args that k3deploy reads (render/network.py opens it between a group's pods).
MASTER_PORT_FLAG = "--master-port"


def _check_master_port(args: list[str]) -> None:
    """`--master-port` at most once and with a TCP port (`--master-port N` or `--master-port=N`): the
    NetworkPolicy opens the port k3deploy reads, so a bare flag or a second copy would open another one."""
    values = []
    for index, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name.replace("_", "-") != MASTER_PORT_FLAG:
            continue
        if not eq:
            value = args[index + 1] if index + 1 < len(args) else ""
        values.append(value)
    if len(values) > 1:
        raise ValueError(f"extra_args names {MASTER_PORT_FLAG} {len(values)} times; name it once")
    if values and not (values[0].isdigit() and 0 < int(values[0]) < 65536):
        raise ValueError(
            f"extra_args {MASTER_PORT_FLAG} needs a TCP port after it (1 to 65535), got {values[0][:20]!r}"
        )


def check_extra_args(args: list[str]) -> None:
    """ValueError for a managed flag in `args` (vLLM takes `--a_b` for `--a-b`), or a bad `--master-port`."""
    given = {arg.split("=", 1)[0] for arg in args if arg.startswith("-")}
    given |= {flag.replace("_", "-") for flag in given if flag.startswith("--")}
    for flag, source in MANAGED_FLAGS.items():
        if flag in given:
            raise ValueError(f"extra_args {flag} is a flag k3deploy renders itself (from {source}); set that instead")
    _check_master_port(args)
