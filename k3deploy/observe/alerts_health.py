"""The health alerts of a deployment: is it serving at all (leader readiness, the vLLM series, served requests), are
its latency objectives kept (TTFT / TPOT p99), are its GPUs and the rack's NVLink healthy (DCGM). Pure; expressions
from observe/promql_health.py."""

from __future__ import annotations

from k3deploy.observe import promql_health as health
from k3deploy.observe.alert_rule import Alert
from k3deploy.observe.promql import TPOT, TTFT, Scope
from k3deploy.profile.model import Profile

#: How long without a served request (while requests are in flight or fail) is an outage, not a lull.
NO_SUCCESS_WINDOW = "10m"
#: Latency burn: the p99 is over its objective over the long window and still over it in the short one, so a burst
#: that already ended does not page and a sustained breach pages within minutes.
BURN_LONG_WINDOW = "1h"
BURN_SHORT_WINDOW = "5m"
#: XIDs, NVLink errors and thermal throttling are judged over this window (throttled above the profile's
#: kubernetes.gpu_thermal_throttle_max fraction of it alerts).
GPU_WINDOW = "10m"
#: The guard passes every 30 s: a fault held over four passes is one it will not resolve by itself (a wait the next
#: pass ends, once a cordon or a finished group frees room, stays quiet).
GUARD_HOLD_FOR = "2m"


def availability_alerts(profile: Profile, scope: Scope) -> list[Alert]:
    """The serving leader not Ready, the engine's series gone, no served request while requests come."""
    name, budget = profile.name, profile.startup_budget.total_s
    return [
        Alert(
            "K3DeployLeaderNotReady",
            health.leaders_not_ready(scope, budget),
            "5m",
            "critical",
            f"{name}: a serving leader is not Ready",
            "Leader pod {{ $labels.pod }} is not Ready although it was Ready earlier or is past its startup budget "
            f"({budget} s): the API Service sends it no requests.",
        ),
        Alert(
            "K3DeployVllmMetricsAbsent",
            health.vllm_series_absent(scope, budget),
            "5m",
            "critical",
            f"{name}: no vLLM engine exports metrics",
            f"Prometheus has no vLLM series from Service {scope.service}: the engines are gone (crashed, deleted, or "
            "not scraped), and no leader is still within its startup budget.",
        ),
        Alert(
            "K3DeployNoSuccessfulRequests",
            health.no_served_requests(scope, NO_SUCCESS_WINDOW),
            "5m",
            "critical",
            f"{name}: no request served in {NO_SUCCESS_WINDOW}",
            f"No request finished with an answer (stop or length) in {NO_SUCCESS_WINDOW} although requests were "
            "running or failed: the engine is stuck or every request errors.",
        ),
    ]


def latency_alerts(profile: Profile, scope: Scope) -> list[Alert]:
    """TTFT and TPOT p99 burning through their objectives (rendered only when the profile sets them)."""
    out = []
    for key, metric, objective, what in (
        ("TTFT", TTFT, profile.targets.ttft_p99_s, "time to first token"),
        ("TPOT", TPOT, profile.targets.tpot_p99_s, "time per output token"),
    ):
        if objective is None:
            continue
        long_q = health.latency_quantile(metric, scope, BURN_LONG_WINDOW, 0.99)
        short_q = health.latency_quantile(metric, scope, BURN_SHORT_WINDOW, 0.99)
        out.append(
            Alert(
                f"K3Deploy{key}SloBurn",
                f"({long_q} > {objective:g}) and ({short_q} > {objective:g})",
                "5m",
                "warning",
                f"{profile.name}: {what} p99 over its {objective:g} s objective",
                f'The {what} p99 over {BURN_LONG_WINDOW} is {{{{ $value | printf "%.3g" }}}} s, over the objective '
                f"{objective:g} s, and still over it in the last {BURN_SHORT_WINDOW}.",
            )
        )
    return out


def gpu_alerts(profile: Profile, scope: Scope) -> list[Alert]:
    """XID errors, failed row remapping, NVLink errors and thermal throttling of the group's GPUs."""
    name, host, gpu = profile.name, scope.gpu_host_label, scope.gpu_index_label
    kube = profile.kubernetes
    where = f"GPU {{{{ $labels.{gpu} }}}} on {{{{ $labels.{host} }}}}"
    return [
        Alert(
            "K3DeployGpuXidError",
            f"{health.gpu_xid_changes(scope, GPU_WINDOW)} > 0",
            "0m",
            "warning",
            f"{name}: a GPU of the group reported an XID error",
            f"{where} logged a new XID error in the last {GPU_WINDOW} (DCGM_FI_DEV_XID_ERRORS, the last XID the "
            f"driver logged, changed {{{{ $value }}}} time(s)); the XID is in the node's kernel log.",
        ),
        Alert(
            "K3DeployGpuRowRemapFailure",
            f"{health.gpu_row_remap_failed(scope)} > 0",
            "0m",
            "critical",
            f"{name}: a GPU's memory row remapping failed",
            f"{where} could not remap a failing HBM row: its memory is no longer reliable.",
        ),
        Alert(
            "K3DeployNvlinkErrors",
            health.nvlink_errors_seen(scope, GPU_WINDOW),
            "0m",
            "warning",
            f"{name}: NVLink errors on a GPU of the group",
            f'{where} counted {{{{ $value | printf "%.0f" }}}} NVLink recovery or data-CRC errors in {GPU_WINDOW}.',
        ),
        Alert(
            "K3DeployGpuThermalThrottling",
            f"{health.thermal_throttled_fraction(scope, GPU_WINDOW, kube.dcgm_violation_unit)}"
            f" > {kube.gpu_thermal_throttle_max:g}",
            GPU_WINDOW,
            "warning",
            f"{name}: a GPU of the group is throttled for temperature",
            f"{where} ran with thermally throttled clocks {{{{ $value | humanizePercentage }}}} of the last "
            f"{GPU_WINDOW} (over {kube.gpu_thermal_throttle_max:.0%}; DCGM_FI_DEV_THERMAL_VIOLATION read in "
            f"{kube.dcgm_violation_unit}, kubernetes.dcgm_violation_unit): the whole TP group waits for it.",
        ),
    ]


def guard_alerts(profile: Profile, scope: Scope) -> list[Alert]:
    """The in-cluster guard (kubernetes.guard) holding a tray fault it cannot act on."""
    if not profile.kubernetes.guard:
        return []
    return [
        Alert(
            "K3DeployGuardHoldsFault",
            health.guard_held_faults(scope),
            GUARD_HOLD_FOR,
            "critical",
            f"{profile.name}: k3deploy guard holds a tray fault it cannot act on",
            "{{ $value }} serving group(s) run on a sick tray that k3deploy guard may not move ({{ $labels.reason }}: "
            "RateLimited, guard.max_cordons_per_hour is spent; NoCliqueWithRoom, moving the group would leave no "
            "clique with room for it): the group serves slowly or not at all until someone acts. Its Warning Events "
            "on the LeaderWorkerSet name the trays and why.",
        )
    ]
