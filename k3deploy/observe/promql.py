"""The PromQL of every figure k3deploy watches: one expression per figure, shared by the Grafana dashboard, the
PrometheusRule and `watch --prometheus`. Pure: strings in, strings out.

vLLM series are those of vLLM 0.32's Prometheus logger (vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py;
counters gain the `_total` suffix prometheus_client gives them). GPU series are the DCGM exporter's default counters
(NVIDIA/dcgm-exporter etc/default-counters.csv); pod and Job series are kube-state-metrics'.

A `Scope` says which series: the labels the Prometheus Operator puts on the ServiceMonitor's targets (namespace,
service) for vLLM, the pod names of the group for DCGM and kube-state-metrics. An empty `Scope()` selects every
series, which is what a single server's own /metrics holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

#: vLLM series the expressions read (exposition names, as /metrics prints them).
GENERATION_TOKENS = "vllm:generation_tokens_total"
TPOT = "vllm:request_time_per_output_token_seconds"
TTFT = "vllm:time_to_first_token_seconds"
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits_total"
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries_total"
SPEC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
SPEC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
SPEC_DRAFTS = "vllm:spec_decode_num_drafts_total"
SPEC_ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
#: DCGM exporter series (default counters): utilisation in %, framebuffer in MiB, power in W, NVLink a counter.
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GPU_FB_USED = "DCGM_FI_DEV_FB_USED"
GPU_POWER = "DCGM_FI_DEV_POWER_USAGE"
GPU_NVLINK = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
#: kube-state-metrics series (kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md, job-metrics.md).
POD_RESTARTS = "kube_pod_container_status_restarts_total"
POD_CREATED = "kube_pod_created"
JOB_FAILED = "kube_job_failed"

#: Every vLLM metric family the expressions name (histograms by their base name).
VLLM_METRICS = (
    GENERATION_TOKENS,
    TPOT,
    TTFT,
    RUNNING,
    WAITING,
    KV_CACHE_USAGE,
    PREFIX_CACHE_HITS,
    PREFIX_CACHE_QUERIES,
    SPEC_ACCEPTED,
    SPEC_DRAFT_TOKENS,
    SPEC_DRAFTS,
    SPEC_ACCEPTED_PER_POS,
)
DCGM_METRICS = (GPU_UTIL, GPU_FB_USED, GPU_POWER, GPU_NVLINK)
KUBE_STATE_METRICS = (POD_RESTARTS, POD_CREATED, JOB_FAILED)

#: Default rate window: four scrapes of the ServiceMonitor's 30 s interval.
DEFAULT_WINDOW = "2m"
_WINDOW = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")


@dataclass(frozen=True)
class Scope:
    """Which series an expression reads; an unset field adds no matcher.

    The DCGM exporter labels each GPU's series with the pod using it, but a ServiceMonitor with honorLabels
    false (dcgm-exporter's chart default, deployment/values.yaml) renames them exported_namespace and
    exported_pod, so those are the default label names of the GPU matchers. `pod_pattern` (a regex of the serving
    pods' names) selects pods when set, else every pod named `<pod_prefix>-...`.
    """

    namespace: str | None = None
    service: str | None = None
    pod_prefix: str | None = None
    smoke_job: str | None = None
    gpu_namespace_label: str = "exported_namespace"
    gpu_pod_label: str = "exported_pod"
    gpu_host_label: str = "Hostname"
    gpu_index_label: str = "gpu"
    leader_pattern: str | None = None
    pod_pattern: str | None = None

    def server(self) -> str:
        """Matchers of the vLLM server's series (the ServiceMonitor's target labels)."""
        return _selector([("namespace", "=", self.namespace), ("service", "=", self.service)])

    def pods(self) -> str:
        """Matchers of the group's pods in kube-state-metrics series."""
        return _selector([("namespace", "=", self.namespace), ("pod", "=~", self._pod_re())])

    def leaders(self) -> str:
        """Matchers of the group leaders' pods in kube-state-metrics series."""
        return _selector([("namespace", "=", self.namespace), ("pod", "=~", self.leader_pattern)])

    def gpus(self) -> str:
        """Matchers of the group's GPUs in DCGM exporter series."""
        return _selector(
            [
                (self.gpu_namespace_label, "=", self.namespace),
                (self.gpu_pod_label, "=~", self._pod_re()),
            ]
        )

    def gpu_by(self) -> str:
        """The labels that tell one GPU from another in DCGM series: host, then device index."""
        return f"{self.gpu_host_label}, {self.gpu_index_label}"

    def _pod_re(self) -> str | None:
        return self.pod_pattern if self.pod_pattern is not None else _prefix_re(self.pod_prefix)

    def smoke(self) -> str:
        """Matchers of the smoke Job in kube-state-metrics series."""
        return _selector([("namespace", "=", self.namespace), ("job_name", "=", self.smoke_job)])


def _prefix_re(prefix: str | None) -> str | None:
    # RE2 metacharacters only: re.escape would also escape '-', which every pod name holds.
    return None if prefix is None else re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", prefix) + "-.*"


def _quote(value: str) -> str:
    # PromQL string literals take Go escapes; a backslash and a double quote are the ones a label value needs.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _selector(matchers: list[tuple[str, str, str | None]]) -> str:
    parts = [f"{label}{op}{_quote(value)}" for label, op, value in matchers if value is not None]
    return "{" + ",".join(parts) + "}" if parts else ""


def checked_window(window: str) -> str:
    """The window, if it is a PromQL duration such as 2m (else ValueError): it is pasted into expressions."""
    if not _WINDOW.match(window):
        raise ValueError(f"{window!r} is not a PromQL duration such as 2m")
    return window


_window = checked_window


#: Seconds per PromQL duration unit (prometheus/common model/time.go ParseDuration).
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def window_seconds(window: str) -> float:
    """Seconds of a PromQL duration such as 1h30m."""
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in re.findall(r"(\d+)(ms|s|m|h|d|w|y)", _window(window)))


def _rate(metric: str, sel: str, window: str) -> str:
    return f"sum(rate({metric}{sel}[{_window(window)}]))"


def output_tok_s(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Generated tokens per second over all requests."""
    return _rate(GENERATION_TOKENS, scope.server(), window)


def decode_tok_s(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Per-request decode tok/s: 1 / the mean time per output token of the requests finished in the window."""
    sel = scope.server()
    return f"{_rate(TPOT + '_count', sel, window)} / {_rate(TPOT + '_sum', sel, window)}"


def ttft_s(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Mean time to first token (seconds) of the requests that got one in the window."""
    sel = scope.server()
    return f"{_rate(TTFT + '_sum', sel, window)} / {_rate(TTFT + '_count', sel, window)}"


def running_requests(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Requests being decoded now (a gauge; the window is unused)."""
    return f"sum({RUNNING}{scope.server()})"


def waiting_requests(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Requests queued for a slot now (a gauge; the window is unused)."""
    return f"sum({WAITING}{scope.server()})"


def waiting_growth(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """How much the waiting queue grew over the window (a least-squares slope times the window)."""
    return f"sum(deriv({WAITING}{scope.server()}[{_window(window)}]))"


def kv_cache_usage(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """KV-cache usage, a fraction (1 is full) of the fullest engine (a gauge; the window is unused)."""
    return f"max({KV_CACHE_USAGE}{scope.server()})"


def prefix_cache_hit_rate(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Fraction of queried prompt tokens found in the prefix cache."""
    sel = scope.server()
    return f"{_rate(PREFIX_CACHE_HITS, sel, window)} / {_rate(PREFIX_CACHE_QUERIES, sel, window)}"


def acceptance_rate(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Fraction of draft tokens the target accepted."""
    sel = scope.server()
    return f"{_rate(SPEC_ACCEPTED, sel, window)} / {_rate(SPEC_DRAFT_TOKENS, sel, window)}"


def mean_acceptance_length(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Tokens per target step: 1 + accepted / drafts (what `targets.min_acceptance_length` bounds)."""
    sel = scope.server()
    return f"1 + {_rate(SPEC_ACCEPTED, sel, window)} / {_rate(SPEC_DRAFTS, sel, window)}"


def per_position_acceptance(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Acceptance of each draft position (label `position`): accepted there / drafts."""
    sel, w = scope.server(), _window(window)
    return (
        f"sum by (position) (rate({SPEC_ACCEPTED_PER_POS}{sel}[{w}])) / on() group_left() {_rate(SPEC_DRAFTS, sel, w)}"
    )


def gpu_utilization(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """GPU utilisation (%) per GPU of the group (a gauge; the window is unused)."""
    return f"avg by ({scope.gpu_by()}) ({GPU_UTIL}{scope.gpus()})"


def gpu_memory_used_bytes(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Framebuffer memory used per GPU, bytes (DCGM reports MiB)."""
    return f"sum by ({scope.gpu_by()}) ({GPU_FB_USED}{scope.gpus()}) * 1048576"


def gpu_power_watts(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Power draw per GPU, watts."""
    return f"sum by ({scope.gpu_by()}) ({GPU_POWER}{scope.gpus()})"


def nvlink_traffic(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """NVLink traffic per GPU: the rate of DCGM's all-lanes bandwidth counter."""
    return f"sum by ({scope.gpu_by()}) (rate({GPU_NVLINK}{scope.gpus()}[{_window(window)}]))"


def pod_restarts(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Container restarts of the group's pods over the window."""
    return f"sum(increase({POD_RESTARTS}{scope.pods()}[{_window(window)}]))"


def recreated_leaders(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """Leader pods created within the window while the group already ran before it: a recreated group.

    LeaderWorkerSet recreates a whole group (new pods under the same names) when one pod fails, so container
    restart counts start again at zero; the youngest leader's creation time is the trace a recreation leaves.
    Reading the value, not the series, holds whether kube-state-metrics labels the series with the pod uid or not.
    """
    sel, w = scope.leaders(), _window(window)
    return (
        f"count((time() - {POD_CREATED}{sel}) < {window_seconds(w):g})"
        f" and on() (count({POD_CREATED}{sel} offset {w}) > 0)"
    )


def smoke_job_failed(scope: Scope, window: str = DEFAULT_WINDOW) -> str:
    """1 while the smoke Job has its Failed condition (backoff limit or deadline reached), else 0 or no data.

    kube-state-metrics' kube_job_failed carries the condition status as a label (docs/metrics/workload/job-metrics.md).
    """
    sel = scope.smoke()
    sel = sel[:-1] + ',condition="true"}' if sel else '{condition="true"}'
    return f"max({JOB_FAILED}{sel})"


@dataclass(frozen=True)
class Figure:
    """One figure: its key, title, unit (a Grafana unit id) and expression."""

    key: str
    title: str
    unit: str
    expr: Callable[[Scope, str], str]


#: The figures in display order: serving, speculative decoding, GPUs, pods.
FIGURES: tuple[Figure, ...] = (
    Figure("output_tok_s", "Output tok/s", "short", output_tok_s),
    Figure("decode_tok_s", "Per-request decode tok/s", "short", decode_tok_s),
    Figure("ttft_s", "Time to first token (mean)", "s", ttft_s),
    Figure("running", "Running requests", "short", running_requests),
    Figure("waiting", "Waiting requests", "short", waiting_requests),
    Figure("kv_cache_usage", "KV-cache usage", "percentunit", kv_cache_usage),
    Figure("prefix_cache_hit_rate", "Prefix-cache hit rate", "percentunit", prefix_cache_hit_rate),
    Figure("acceptance_rate", "Draft acceptance rate", "percentunit", acceptance_rate),
    Figure("mean_acceptance_length", "Mean acceptance length", "short", mean_acceptance_length),
    Figure("per_position_acceptance", "Acceptance per draft position", "percentunit", per_position_acceptance),
    Figure("gpu_utilization", "GPU utilisation", "percent", gpu_utilization),
    Figure("gpu_memory_used", "GPU memory used", "bytes", gpu_memory_used_bytes),
    Figure("gpu_power", "GPU power", "watt", gpu_power_watts),
    Figure("nvlink_traffic", "NVLink traffic (DCGM counter rate)", "short", nvlink_traffic),
    Figure("pod_restarts", "Pod restarts", "short", pod_restarts),
)


def expressions(scope: Scope, window: str = DEFAULT_WINDOW) -> dict[str, str]:
    """Every figure's expression by key."""
    return {figure.key: figure.expr(scope, window) for figure in FIGURES}
