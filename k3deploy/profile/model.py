"""The profile: one pydantic model for everything a deployment needs, with cross-field validation.

Pure: imports nothing that does I/O. Every constant the plan or the manifests use (layer counts, HBM
per GPU, checkpoint size, flags) lives here as a field, never as a literal in code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from k3deploy.kobject import JsonObject
from k3deploy.lws import name_length_reason
from k3deploy.profile.base import _Strict
from k3deploy.profile.flags import check_extra_args
from k3deploy.profile.guard_spec import GuardSpec
from k3deploy.profile.kubernetes_parts import check_host_vllm
from k3deploy.profile.kubernetes_spec import IMAGE_REPOSITORY, KubernetesSpec, release_version
from k3deploy.profile.names import (
    EnvName,
    LabelValue,
    PinnedImage,
    check_dns_label,
)
from k3deploy.profile.observe_spec import ObserveSpec
from k3deploy.profile.startup import StartupBudget, StorageSpec

__all__ = ["IMAGE_REPOSITORY", "release_version"]  # re-exported: they were defined here before the split

#: Bytes per element of vLLM's --dtype values; "auto" means the checkpoint's dtype, bf16 for the models here.
_MODEL_DTYPE_BYTES = {"auto": 2, "bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}


class ModelSpec(_Strict):
    """The target model and the architecture facts the capacity plan needs."""

    id: str = Field(description="Hub repo id or a local directory path of the target model.")
    revision: str | None = Field(None, description="Hub revision to pin (commit sha preferred); null for a local path.")
    served_name: str = Field(description="Name the OpenAI API serves the model under (--served-model-name).")
    trust_remote_code: bool = False
    rehearsal: bool = Field(
        False, description="True for a generated random-weight model used only to rehearse the pipeline."
    )
    context_length: int = Field(gt=0, description="Maximum context the model supports, in tokens.")
    total_layers: int = Field(gt=0)
    mla_layers: int = Field(ge=0, description="Layers with an MLA (paged) KV cache.")
    mla_kv_elements: int = Field(
        ge=0, description="Cached elements per token per MLA layer (kv_lora_rank + qk_rope_head_dim)."
    )
    linear_layers: int = Field(
        0, ge=0, description="Linear-attention (KDA) layers with a per-sequence recurrent state."
    )
    linear_state_elements: int = Field(
        0, ge=0, description="Recurrent-state elements per linear layer per sequence (heads x dk x dv)."
    )
    linear_state_dtype_bytes: int = Field(4, gt=0)
    linear_state_tp_sharded: bool = Field(
        True, description="Linear-attention heads are split across tensor-parallel ranks."
    )
    linear_conv_dim: int = Field(
        0,
        ge=0,
        description=(
            "Short-convolution channels of one KDA layer (q, k and v: 3 x heads x head_dim), split across TP ranks like the "
            "heads. vLLM caches kernel_size - 1 + num_speculative_tokens positions of them per sequence beside the recurrent "
            "state (vllm MambaStateShapeCalculator.kda_state_shape)."
        ),
    )
    linear_conv_kernel_size: int = Field(
        4, ge=1, description="KDA short_conv_kernel_size (config.json linear_attn_config)."
    )
    linear_conv_dtype_bytes: int = Field(
        2,
        gt=0,
        description=(
            "Bytes per cached conv-state element: vLLM stores it in the model dtype (bf16) when mamba_cache_dtype is auto, "
            "while the recurrent state stays float32 (vllm MambaStateDtypeCalculator.kda_state_dtype)."
        ),
    )
    kv_block_alignment_tokens: int = Field(
        1,
        ge=1,
        description=(
            "Tokens the KV block size is a multiple of. For a hybrid MLA + linear-attention model vLLM makes it a multiple of "
            "128, grows it until one MLA page is at least one KDA state page, then pads the KDA page to the MLA page "
            "(vllm Platform._align_hybrid_block_size)."
        ),
    )
    linear_prefill_checkpoint_blocks: int = Field(
        0,
        ge=0,
        description=(
            "Extra KDA state pages per sequence with prefix caching: 1 with the FlashKDA prefill backend, 0 otherwise "
            "(vllm KimiK3DeltaAttention.get_kv_cache_spec). An assumption: the backend is chosen on the GPU."
        ),
    )
    checkpoint_bytes: int = Field(gt=0, description="Bytes of the weights on disk (and, near enough, in HBM).")
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None

    @model_validator(mode="after")
    def _layers_add_up(self) -> ModelSpec:
        if self.mla_layers + self.linear_layers > self.total_layers:
            raise ValueError(
                f"mla_layers ({self.mla_layers}) + linear_layers ({self.linear_layers}) exceed total_layers ({self.total_layers})"
            )
        return self


class SpeculativeSpec(_Strict):
    """vLLM `--speculative-config`: the keys vLLM reads, plus facts for the plan."""

    method: str = Field(description="vLLM speculative method: dspark, draft_model, ngram, eagle3, ...")
    model: str | None = Field(None, description="Draft model repo id or path; null for model-free methods (ngram).")
    revision: str | None = Field(None, description="Hub revision of the draft model to pin.")
    num_speculative_tokens: int
    draft_sample_method: str | None = None
    rejection_sample_method: Literal["standard", "synthetic", "block"] | None = None
    attention_backend: str | None = None
    extra: JsonObject = Field(
        default_factory=dict, description="Further keys passed verbatim (prompt_lookup_max, ...)."
    )
    draft_bytes: int = Field(0, ge=0, description="Bytes of the draft weights, for the capacity plan.")
    draft_kv_layers: int = Field(
        0,
        ge=0,
        description=(
            "Attention layers of the draft model; each caches KV in the target's per-layer layout (model.mla_kv_elements) "
            "and shares the KV space with the target. DSpark: 5 dense MLA layers sharing the 576-element layout "
            "(Inferact/Kimi-K3-DSpark model card). An assumption: the draft's config is not read here."
        ),
    )

    @field_validator("num_speculative_tokens")
    @classmethod
    def _tokens_in_range(cls, value: int) -> int:
        if not 1 <= value <= 16:
            raise ValueError(f"must be between 1 and 16, got {value}")
        return value

    def config(self) -> JsonObject:
        """The speculative config as vLLM receives it (None-valued keys dropped, extras merged)."""
        keys = (
            "model",
            "method",
            "num_speculative_tokens",
            "attention_backend",
            "draft_sample_method",
            "rejection_sample_method",
        )
        out: JsonObject = {key: getattr(self, key) for key in keys if getattr(self, key) is not None}
        if self.revision is not None and self.model is not None:
            out["revision"] = self.revision
        out.update(self.extra)
        return out


class HardwareSpec(_Strict):
    """What one GPU node looks like; preflight checks the real ones against it."""

    gpu_product: str = Field(description="Name NVML / nvidia-smi report, e.g. 'NVIDIA GB300'.")
    allowed_products: list[str] = Field(default_factory=list, description="Further products accepted (e.g. B300).")
    gfd_product_label: LabelValue | None = Field(
        None, description="GPU Feature Discovery value of nvidia.com/gpu.product."
    )
    gpu_memory_mib: int = Field(gt=0, description="Memory one GPU reports, in MiB (a GB300 reports 284208).")
    compute_capability: str = "10.3"
    min_driver_version: str = "580"
    min_cuda_version: str = "13.0"
    arch: Literal["arm64", "amd64"] = "arm64"
    nvlink_domain: bool = Field(True, description="Multi-node NVLink (needs IMEX / a ComputeDomain).")
    runtime_reserve_mib: int = Field(
        8192,
        ge=0,
        description=(
            "Per-GPU memory kept for activations, CUDA graphs and NCCL buffers. vLLM measures this at start-up (its profile "
            "run) on the real GPUs; k3deploy cannot, so this is an estimate to confirm against the server's start-up log."
        ),
    )
    local_disk_read_mb_s: float | None = Field(
        None,
        gt=0,
        description="MB/s a load reads the weights at from a tray's local NVMe (`k3deploy stage`'s copy): `plan` turns "
        "it into a load time. A figure to replace with one measured on the trays (null: not planned).",
    )


class ParallelSpec(_Strict):
    """How the model is split: tensor parallel across nodes x GPUs per node."""

    nodes: int = Field(ge=1)
    gpus_per_node: int = Field(ge=1)
    tensor_parallel_size: int = Field(ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)
    replicas: int = Field(
        1,
        ge=1,
        description="Serving groups (one LeaderWorkerSet group of nnodes trays each); each group stays inside one NVLink clique.",
    )


#: Environment variables k3deploy derives, and from what: setting them in vllm.env would be a second source.
DERIVED_ENV = {
    "VLLM_USE_NCCL_SYMM_MEM": "vllm.nccl_symm_mem",
    "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "vllm.execute_model_timeout_s",
    "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "vllm.nccl_heartbeat_timeout_s",
}
#: Derived for the pods of target kubernetes only (the local target keeps whatever vllm.env says).
DERIVED_KUBE_ENV = {"VLLM_ENGINE_READY_TIMEOUT_S": "storage.read_mb_s and storage.compile_allowance_s"}
#: vLLM flags k3deploy renders from a field.
DERIVED_FLAGS = {
    "--distributed-timeout-seconds": "distributed_timeout_s",
    "--disable-custom-all-reduce": "disable_custom_all_reduce",
    "--per-request-spec-decode-metrics": "per_request_spec_decode_metrics",
}


class VllmSpec(_Strict):
    """The vLLM server: image, serving flags and environment."""

    image: PinnedImage = Field(description="Container image with tag or digest (Kubernetes target).")
    image_arch: Literal["arm64", "amd64"] = Field("arm64", description="CPU architecture the image is built for.")
    port: int = Field(8000, gt=0, lt=65536)
    max_model_len: int = Field(gt=0)
    kv_cache_dtype: Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16", "float16"] = Field(
        "auto",
        description=(
            "vLLM --kv-cache-dtype (names from vllm.config.cache.CacheDType); auto caches in the model dtype (vllm.dtype)."
        ),
    )
    kv_cache_dtype_bytes: int | None = Field(
        None, description="Bytes per cached element; derived from kv_cache_dtype when null."
    )
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    dtype: str | None = None
    load_format: str | None = None
    max_num_seqs: int | None = None
    enable_prefix_caching: bool | None = None
    enforce_eager: bool = False
    attention_config: JsonObject | None = None
    per_request_spec_decode_metrics: Literal["none", "summary", "detailed"] = Field(
        "none",
        description="--per-request-spec-decode-metrics (vllm.config.observability, experimental): each response "
        "carries its own acceptance counts, so smoke judges acceptance from its own requests, which no other "
        "traffic can move. Needs speculative decoding.",
    )
    extra_args: list[str] = Field(default_factory=list, description="Further vLLM serve arguments, passed verbatim.")
    env: dict[EnvName, str] = Field(default_factory=dict)
    # Multi-node collectives; null means the default k3deploy derives from the parallel layout (see argv.py).
    distributed_timeout_s: int | None = Field(
        None,
        gt=0,
        description="--distributed-timeout-seconds (torch.distributed init and collectives); null: 1800 when the group "
        "spans nodes (pods of a group can start minutes apart), else vLLM's default (PyTorch's 600 s).",
    )
    disable_custom_all_reduce: bool | None = Field(
        None,
        description="--disable-custom-all-reduce; null: on when the tensor-parallel group spans nodes (vLLM's custom "
        "all-reduce uses CUDA IPC handles, which do not cross trays).",
    )
    nccl_symm_mem: bool | None = Field(
        None,
        description="VLLM_USE_NCCL_SYMM_MEM; null: 0 when the group spans nodes (NVIDIA Dynamo's Kimi K3 TP16 recipe "
        "sets it: symmetric memory breaks CUDA-graph capture), else vLLM's default.",
    )
    execute_model_timeout_s: int | None = Field(
        None,
        gt=0,
        description="VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS: how long the engine waits for the workers' step before it "
        "declares them dead; null: 1800 when the group spans nodes (the vLLM recipe's multi-node value; vLLM's own "
        "default is 300 s, which a cross-tray step at 1M context or a first CUDA-graph capture can exceed), else "
        "vLLM's default.",
    )
    nccl_heartbeat_timeout_s: int | None = Field(
        None,
        gt=0,
        description="TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC: how long PyTorch's NCCL watchdog waits before it aborts the "
        "process; null: 1800 when the group spans nodes (NVIDIA Dynamo's Kimi K3 recipe), else PyTorch's 480 s.",
    )

    @model_validator(mode="after")
    def _one_source_per_knob(self) -> VllmSpec:
        for key in DERIVED_ENV:
            if key in self.env:
                raise ValueError(f"env {key} is derived by k3deploy ({DERIVED_ENV[key]}); remove it from vllm.env")
        # vLLM's parser takes --a_b for --a-b, so compare the option names with '_' as '-'.
        given = {arg.split("=", 1)[0].replace("_", "-") for arg in self.extra_args if arg.startswith("--")}
        for flag, field in DERIVED_FLAGS.items():
            if flag in given:
                raise ValueError(f"extra_args {flag} is rendered from vllm.{field}; set that field instead")
        check_extra_args(list(self.extra_args))
        return self

    def kv_bytes_per_element(self) -> int:
        """Bytes per cached KV element for the configured dtype."""
        if self.kv_cache_dtype_bytes is not None:
            return self.kv_cache_dtype_bytes
        if (
            self.kv_cache_dtype == "auto"
        ):  # vLLM caches in the model dtype (vllm.utils.torch_utils.kv_cache_dtype_str_to_dtype)
            return _MODEL_DTYPE_BYTES.get(self.dtype or "auto", 2)
        return {"fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "bfloat16": 2, "float16": 2}[self.kv_cache_dtype]


class LocalSpec(_Strict):
    """A vLLM server on this host (the rehearsal target)."""

    python: str | None = Field(
        None, description="Interpreter with vLLM installed; default: K3DEPLOY_VLLM_PYTHON or the current one."
    )
    host: str = "127.0.0.1"
    state_dir: str | None = Field(
        None, description="Where logs, pid files and the generated model live; default ~/.cache/k3deploy."
    )
    ready_timeout_s: int = Field(600, gt=0)
    min_free_ram_gib: float = Field(4.0, ge=0)
    min_free_disk_gib: float = Field(1.0, ge=0)


class SmokeSpec(_Strict):
    """How `k3deploy smoke` exercises the endpoint."""

    correctness: bool = True
    correctness_max_tokens: int = Field(
        2048, ge=8, description="Output budget of each correctness probe (room for a reasoning model to think)."
    )
    api: Literal["chat", "completions"] = Field(
        "chat", description="OpenAI API smoke talks to: chat (templated) or completions (raw prompt)."
    )
    requests: int = Field(8, ge=1)
    output_tokens: int = Field(256, ge=2)
    concurrency: list[int] = Field(default_factory=lambda: [1])
    temperature: float = Field(
        0.0,
        ge=0,
        description="Sampling temperature of the measured requests (the correctness probes always use 0). The "
        "published 370 tok/s was measured at 1.0 with top_p 0.95 (SPEED-Bench low_entropy).",
    )
    top_p: float | None = Field(
        None, gt=0, le=1, description="top_p of the measured requests; null: the server's default (1.0)."
    )
    ignore_eos: bool = Field(
        True,
        description="Measured requests run to output_tokens whatever the model says (greedy benchmark style); false: "
        "they end where the model ends them, as a sampled SPEED-Bench run does, and a short answer is no failure.",
    )
    decode_tolerance: float = Field(
        0.0,
        ge=0,
        lt=1,
        description="Fraction below targets.decode_tok_s that smoke still passes: a health gate on a few built-in "
        "prompts is not the published benchmark (`k3deploy bench` on SPEED-Bench judges that figure). 0: the target itself.",
    )
    tier: Literal["low_entropy", "high_entropy", "all"] = "low_entropy"
    require_attribution: bool = Field(
        False,
        description="FAIL the speculative check when the server's counters cannot be tied to smoke's own requests "
        "(other traffic moved them). false: such a figure is reported unattributable with a WARN and never rolls a "
        "group back; correctness and liveness still gate.",
    )
    gate_traffic: bool = Field(
        True,
        description="The API Service and the InferencePool select only leaders whose smoke gate passed (the "
        "k3deploy/gated label a passed gate sets on the leader pod), so a new or re-created group takes no traffic "
        "until it is judged. false: every leader is selected as soon as it is Ready.",
    )
    gate_restarts: bool = Field(
        True,
        description="A leader pod LeaderWorkerSet re-created (a restart, an eviction) is smoke-tested again before it "
        "takes traffic. false: one running the template revision a gate already passed on gets the label without a "
        "smoke, from the next `up` or the smoke Job.",
    )
    request_timeout_s: float = Field(600, gt=0)
    overall_timeout_s: float = Field(3600, gt=0)
    ready_timeout_s: float | None = Field(
        None,
        gt=0,
        le=7 * 24 * 3600,
        description="How long smoke waits for /health to answer 200 before it judges liveness (not counted in "
        "overall_timeout_s); null: judge at once. The in-cluster smoke Job waits "
        "the start-up budget when null (storage, `k3deploy plan`): Argo CD can run it while the model still loads.",
    )


class TargetsSpec(_Strict):
    """What the deployment must reach; smoke judges against these."""

    decode_tok_s: float | None = Field(None, ge=0, description="Minimum median bs=1 decode tok/s (enforced).")
    peak_decode_tok_s: float | None = Field(
        None, ge=0, description="Published peak bs=1 decode tok/s (reported, not enforced)."
    )
    baseline_decode_tok_s: float | None = Field(
        None, ge=0, description="Published decode tok/s without speculation (reported)."
    )
    min_acceptance_length: float | None = Field(
        None, ge=1, description="Minimum mean acceptance length (1 + accepted/drafts)."
    )
    ttft_p99_s: float | None = Field(
        None, gt=0, description="Time-to-first-token p99 objective, seconds (alerted on, not judged by smoke)."
    )
    tpot_p99_s: float | None = Field(
        None, gt=0, description="Time-per-output-token p99 objective, seconds (alerted on, not judged by smoke)."
    )


class Profile(_Strict):
    """A complete deployment description; see `k3deploy schema` for the JSON Schema."""

    name: str = Field(
        description="Deployment name: a DNS-1123 label of at most 50 characters (44 for `up --strategy blue-green`): "
        "the LeaderWorkerSet's derived pod labels are bounded by 63."
    )
    description: str = ""
    target: str = Field(
        "kubernetes",
        pattern=r"^[a-z][a-z0-9-]*$",
        description=("Where the profile deploys: a name in k3deploy's target registry (kubernetes, local)."),
    )
    production: bool = Field(True, description="Production profiles refuse test-only settings.")
    model: ModelSpec
    speculative: SpeculativeSpec | None = None
    hardware: HardwareSpec | None = None
    parallel: ParallelSpec = Field(
        default_factory=lambda: ParallelSpec(nodes=1, gpus_per_node=1, tensor_parallel_size=1)
    )
    vllm: VllmSpec
    kubernetes: KubernetesSpec = Field(default_factory=KubernetesSpec)
    storage: StorageSpec = Field(
        default_factory=StorageSpec,
        description="How fast the pods read the weight cache: the start-up budget is derived from it (`k3deploy plan`).",
    )
    local: LocalSpec = Field(default_factory=LocalSpec)
    smoke: SmokeSpec = Field(default_factory=SmokeSpec)
    targets: TargetsSpec = Field(default_factory=TargetsSpec)
    guard: GuardSpec = Field(default_factory=GuardSpec)
    observe: ObserveSpec = Field(default_factory=ObserveSpec)

    @field_validator("name")
    @classmethod
    def _name_is_dns_label(cls, value: str) -> str:
        check_dns_label(value)
        reason = name_length_reason(value, 1)
        if reason is not None:
            raise ValueError(reason)
        return value

    @property
    def startup_budget(self) -> StartupBudget:
        """The serving pods' start-up budget (startup probe, VLLM_ENGINE_READY_TIMEOUT_S) and its parts."""
        draft = self.speculative.draft_bytes if self.speculative is not None else 0
        return StartupBudget(
            weight_bytes=self.model.checkpoint_bytes + draft,
            read_mb_s=self.storage.read_mb_s,
            compile_allowance_s=self.storage.compile_allowance_s,
            override_s=self.kubernetes.startup_probe_budget_s,
        )

    @property
    def on_kubernetes(self) -> bool:
        """The profile deploys to a Kubernetes cluster: its kubernetes section (pods, images, PVC) applies."""
        return self.target == "kubernetes"

    @model_validator(mode="after")
    def _cross_field(self) -> Profile:
        par = self.parallel
        if par.tensor_parallel_size * par.pipeline_parallel_size != par.nodes * par.gpus_per_node:
            raise ValueError(
                f"parallel: tensor_parallel_size ({par.tensor_parallel_size}) x pipeline_parallel_size "
                f"({par.pipeline_parallel_size}) must equal nodes ({par.nodes}) x gpus_per_node ({par.gpus_per_node})"
            )
        if self.vllm.max_model_len > self.model.context_length:
            raise ValueError(
                f"vllm.max_model_len ({self.vllm.max_model_len}) is above the model's context_length ({self.model.context_length})"
            )
        if self.production and self.speculative and self.speculative.rejection_sample_method == "synthetic":
            raise ValueError(
                "speculative.rejection_sample_method 'synthetic' is a test mode; a production profile must use 'block' or 'standard'"
            )
        if self.vllm.per_request_spec_decode_metrics != "none" and self.speculative is None:
            # vLLM refuses it at start-up (vllm/config/vllm.py); say so before a 16-GPU group loads.
            raise ValueError("vllm.per_request_spec_decode_metrics requires a speculative section")
        reason = name_length_reason(self.name, par.replicas)
        if reason is not None:
            raise ValueError(reason)
        if self.observe.canary.enabled and (self.target != "kubernetes" or self.observe.pushgateway_url is None):
            raise ValueError("observe.canary needs target 'kubernetes' and observe.pushgateway_url (where it pushes)")
        if self.target == "kubernetes" and self.hardware is None and self.kubernetes.host_vllm is None:
            raise ValueError("hardware is required for target 'kubernetes' (all but a host_vllm rehearsal)")
        if self.target == "kubernetes" and self.kubernetes.host_vllm is not None:
            check_host_vllm(self.kubernetes, self.parallel.nodes, self.hardware is not None)
        if self.target == "kubernetes":
            for key, source in DERIVED_KUBE_ENV.items():
                if key in self.vllm.env:
                    raise ValueError(f"vllm.env {key} is derived from {source}; remove it from vllm.env")
        return self
