"""The PromQL of the health alerts: availability (leader readiness, the vLLM series, successful requests), latency
quantiles, and GPU and rack health from the DCGM exporter. Pure: strings in, strings out; shared by the
PrometheusRule (observe/alerts.py) and the dashboard's latency panels.

Series are those named in observe/promql.py, plus kube-state-metrics' pod readiness (docs/metrics/workload/
pod-metrics.md: kube_pod_status_ready, one series per condition true/false/unknown) and vLLM 0.32's request counters
and latency histograms (vllm/v1/metrics/loggers.py). Of the DCGM fields here only XID_ERRORS and ROW_REMAP_FAILURE
are in dcgm-exporter's default counters (etc/default-counters.csv); the NVLink error and thermal-violation counters
are commented out there, so their alerts stay silent until the exporter's counters list enables them.
"""

from __future__ import annotations

from dataclasses import replace

from k3deploy.observe.promql import KUBE_STATE_METRICS, POD_CREATED, RUNNING, Scope
from k3deploy.observe.promql import checked_window as _window

POD_READY = "kube_pod_status_ready"
REQUEST_SUCCESS = "vllm:request_success_total"
PREEMPTIONS = "vllm:num_preemptions_total"
ITL = "vllm:inter_token_latency_seconds"
GPU_XID = "DCGM_FI_DEV_XID_ERRORS"
GPU_ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
NVLINK_CRC_DATA_ERRORS = "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"
NVLINK_RECOVERY_ERRORS = "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"
GPU_THERMAL_VIOLATION = "DCGM_FI_DEV_THERMAL_VIOLATION"
#: `k3deploy guard`'s gauge of the faults it holds and cannot act on, by reason (fault_guard/metrics.py).
GUARD_HELD_FAULTS = "k3deploy_guard_held_faults"

#: vLLM's finished_reason values (vllm/v1/engine/__init__.py FinishReason): stop and length are a served answer.
SERVED_REASONS = "stop|length"
FAILED_REASONS = "abort|error"

HEALTH_VLLM_METRICS = (REQUEST_SUCCESS, PREEMPTIONS, ITL)
HEALTH_KUBE_STATE_METRICS = (POD_READY,)
HEALTH_DCGM_METRICS = (
    GPU_XID,
    GPU_ROW_REMAP_FAILURE,
    NVLINK_CRC_DATA_ERRORS,
    NVLINK_RECOVERY_ERRORS,
    GPU_THERMAL_VIOLATION,
)
ALL_KUBE_STATE_METRICS = (*KUBE_STATE_METRICS, *HEALTH_KUBE_STATE_METRICS)


def _with(sel: str, matcher: str) -> str:
    """A selector with one more matcher."""
    return sel[:-1] + "," + matcher + "}" if sel else "{" + matcher + "}"


def leaders_not_ready(scope: Scope, startup_budget_s: int) -> str:
    """Leader pods (either colour) that are not Ready although they should serve: Ready within the startup budget,
    or older than it. A leader still loading its model (young and never Ready) is not counted."""
    ready = _with(scope.leaders(), 'condition="true"')
    by = "max by (namespace, pod)"
    return (
        f"({by} ({POD_READY}{ready}) == 0)"
        f" and on (namespace, pod) ("
        f"({by} (max_over_time({POD_READY}{ready}[{startup_budget_s}s])) == 1)"
        f" or ({by} (time() - {POD_CREATED}{scope.leaders()}) > {startup_budget_s})"
        ")"
    )


def vllm_series_absent(scope: Scope, startup_budget_s: int) -> str:
    """1 when the API Service's targets export no vLLM series, unless every leader is still within its startup budget
    (a group loading its model serves no /metrics yet). No leader pods at all counts as absent too."""
    leaders = f"{POD_CREATED}{scope.leaders()}"
    return (
        f"absent({RUNNING}{scope.server()})"
        f" unless on () (count((time() - {leaders}) < {startup_budget_s}) == count({leaders}))"
    )


def no_served_requests(scope: Scope, window: str) -> str:
    """1 when no request finished with an answer (stop or length) in the window although requests were in flight or
    failed (abort, error) in it: an idle server is not a failing one."""
    sel, w = scope.server(), _window(window)
    served = _with(sel, f'finished_reason=~"{SERVED_REASONS}"')
    failed = _with(sel, f'finished_reason=~"{FAILED_REASONS}"')
    return (
        f"(sum(increase({REQUEST_SUCCESS}{served}[{w}])) == 0)"
        f" and on () ((sum(increase({REQUEST_SUCCESS}{failed}[{w}])) > 0)"
        f" or (sum(max_over_time({RUNNING}{sel}[{w}])) > 0))"
    )


def latency_quantile(metric: str, scope: Scope, window: str, quantile: float) -> str:
    """A quantile (seconds) of one of vLLM's latency histograms (by its base name) over the window."""
    if not 0 < quantile < 1:
        raise ValueError(f"quantile {quantile} is not between 0 and 1")
    return f"histogram_quantile({quantile:g}, sum by (le) (rate({metric}_bucket{scope.server()}[{_window(window)}])))"


def request_rate(scope: Scope, window: str) -> str:
    """Finished requests per second, by finished_reason."""
    return f"sum by (finished_reason) (rate({REQUEST_SUCCESS}{scope.server()}[{_window(window)}]))"


def failed_request_rate(scope: Scope, window: str) -> str:
    """Requests per second that finished without an answer (aborted by the client, or an engine error)."""
    sel = _with(scope.server(), f'finished_reason=~"{FAILED_REASONS}"')
    return f"sum(rate({REQUEST_SUCCESS}{sel}[{_window(window)}]))"


def preemption_rate(scope: Scope, window: str) -> str:
    """Preemptions per second (requests evicted from the KV cache, to be recomputed)."""
    return f"sum(rate({PREEMPTIONS}{scope.server()}[{_window(window)}]))"


def busiest_mean_running(scope: Scope, window: str) -> str:
    """The mean number of running requests over the window of the busiest server: at most ~1 is a batch-1 window."""
    return f"max(avg_over_time({RUNNING}{scope.server()}[{_window(window)}]))"


def gpu_xid_changes(scope: Scope, window: str) -> str:
    """How often each GPU's last XID error changed in the window: DCGM_FI_DEV_XID_ERRORS holds the last XID the driver
    logged (dcgm-exporter etc/default-counters.csv: "Value of the last XID error encountered"), not a count, so a
    new XID shows as a change (and an old one, still held, as none)."""
    return f"max by ({scope.gpu_by()}) (changes({GPU_XID}{scope.gpus()}[{_window(window)}]))"


def gpu_row_remap_failed(scope: Scope) -> str:
    """1 per GPU of the group whose HBM row remapping has failed (the GPU needs replacing)."""
    return f"max by ({scope.gpu_by()}) ({GPU_ROW_REMAP_FAILURE}{scope.gpus()})"


def nvlink_errors_seen(scope: Scope, window: str) -> str:
    """GPUs of the group with NVLink recovery errors, else data-CRC errors, in the window, and how many (opt-in DCGM
    counters; either one alone is enough)."""
    sel, w, by = scope.gpus(), _window(window), f"sum by ({scope.gpu_by()})"
    return (
        f"({by} (increase({NVLINK_RECOVERY_ERRORS}{sel}[{w}])) > 0)"
        f" or ({by} (increase({NVLINK_CRC_DATA_ERRORS}{sel}[{w}])) > 0)"
    )


#: Units of DCGM's *_VIOLATION counters per second.
VIOLATION_UNITS_PER_S = {"ns": 1e9, "us": 1e6}


def thermal_throttled_fraction(scope: Scope, window: str, unit: str) -> str:
    """Fraction of the window each GPU of the group was clock-throttled for temperature; `unit` is the counter's
    (kubernetes.dcgm_violation_unit)."""
    per_s = VIOLATION_UNITS_PER_S[unit]
    return f"sum by ({scope.gpu_by()}) (rate({GPU_THERMAL_VIOLATION}{scope.gpus()}[{_window(window)}])) / {per_s:g}"


def guard_held_faults(scope: Scope) -> str:
    """Faults the in-cluster guard holds and cannot act on, by reason: its Deployment's pods (`<name>-guard-...`),
    scraped by its PodMonitor (the Prometheus Operator labels them with namespace and pod)."""
    guard = replace(scope, pod_pattern=None, pod_prefix=f"{scope.pod_prefix}-guard").pods()
    return f"max by (namespace, reason) ({GUARD_HELD_FAULTS}{guard}) > 0"
