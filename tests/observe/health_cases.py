"""`promtool test rules` cases of the health alerts (observe/alerts_health.py): availability, latency objectives, GPU
and NVLink health, each with series that must fire it and series that must not. Run by test_alert_rules.py."""

from __future__ import annotations

from tests.observe.promtool import GPU, GPU_LABELS, K3, KSM, NS, SERVER, Case, Fired, cumulative

LEADER = {"namespace": "kimi-k3", "pod": f"{K3}-0"}
READY = f'kube_pod_status_ready{{{KSM},pod="{K3}-0",uid="u1",condition="true"}}'
GREEN_READY = f'kube_pod_status_ready{{{KSM},pod="{K3}-green-0",uid="u2",condition="true"}}'
CREATED = f'kube_pod_created{{{KSM},pod="{K3}-0",uid="u1"}}'
GREEN_CREATED = f'kube_pod_created{{{KSM},pod="{K3}-green-0",uid="u2"}}'
RUNNING = f"vllm:num_requests_running{{{SERVER}}}"
SERVICE = {"namespace": "kimi-k3", "service": f"{K3}-api"}


def _success(reason: str) -> str:
    return f'vllm:request_success_total{{{SERVER},finished_reason="{reason}"}}'


def _buckets(metric: str, per_minute: dict[str, float], minutes: int) -> dict[str, str]:
    """A histogram's cumulative bucket counters growing by `per_minute` (le -> observations at or under it)."""
    return {f'{metric}_bucket{{{SERVER},le="{le}"}}': f"0+{n:g}x{minutes}" for le, n in per_minute.items()}


TTFT = "vllm:time_to_first_token_seconds"
TPOT = "vllm:request_time_per_output_token_seconds"
#: 5 % of requests in (10, 20] s: the p99 interpolates to 18 s, over the 10 s objective.
TTFT_SLOW = {"1": 50, "5": 90, "10": 95, "20": 100, "+Inf": 100}
#: All under 10 s: the p99 is 9.5 s.
TTFT_FAST = {"1": 50, "5": 90, "10": 100, "20": 100, "+Inf": 100}

HEALTH_CASES = (
    Case(
        "a leader that was Ready and is not fires after 5m",
        "K3DeployLeaderNotReady",
        {READY: "1x10 0x20", CREATED: "0x30"},
        {"15m": [], "17m": [Fired(labels=LEADER)]},
    ),
    Case(
        # The built-in's start-up budget is 7,610 s (126 m 50 s): past it from the 127m evaluation, firing 5m later.
        "a leader never Ready past its startup budget fires",
        "K3DeployLeaderNotReady",
        {READY: "0x160", CREATED: "0x160"},
        {"110m": [], "131m": [], "133m": [Fired(labels=LEADER)]},
    ),
    Case(
        "a green leader loading its model beside a Ready blue one stays quiet",
        "K3DeployLeaderNotReady",
        {READY: "1x40", CREATED: "0x40", GREEN_READY: "0x40", GREEN_CREATED: "0x40"},
        {"20m": [], "40m": []},
    ),
    Case(
        "the vLLM series gone while an old leader stands fires after 5m",
        "K3DeployVllmMetricsAbsent",
        {RUNNING: "1x30 stale", CREATED: "0x40"},
        {"150m": [], "170m": [Fired(labels=SERVICE)]},
        interval="5m",
    ),
    Case(
        "no leader pod and no vLLM series fires",
        "K3DeployVllmMetricsAbsent",
        {f'kube_pod_created{{{KSM},pod="other-0"}}': "0x20"},
        {"4m": [], "10m": [Fired(labels=SERVICE)]},
    ),
    Case(
        "a group still loading (no series yet) and a serving one stay quiet",
        "K3DeployVllmMetricsAbsent",
        {CREATED: "0x40", f"vllm:num_requests_running{{{NS},service='other-api'}}": "1x40"},
        {"20m": [], "40m": []},
    ),
    Case(
        "a request stuck running with nothing served fires after 5m",
        "K3DeployNoSuccessfulRequests",
        {RUNNING: "1x30", _success("stop"): "5x30", _success("length"): "2x30", _success("error"): "0x30"},
        {"5m": [], "7m": [Fired()]},
    ),
    Case(
        "every request erroring fires",
        "K3DeployNoSuccessfulRequests",
        {RUNNING: "0x30", _success("stop"): "5x30", _success("length"): "0x30", _success("error"): "0+3x30"},
        {"5m": [], "7m": [Fired()]},
    ),
    Case(
        "an idle server and a serving one stay quiet",
        "K3DeployNoSuccessfulRequests",
        {
            RUNNING: "0x10 2x20",
            _success("stop"): "5x10 5+4x20",
            _success("length"): "0x30",
            _success("error"): "0x30",
        },
        {"9m": [], "20m": [], "30m": []},
    ),
    Case(
        "a TTFT p99 of 18 s against 10 s fires after 5m",
        "K3DeployTTFTSloBurn",
        _buckets(TTFT, TTFT_SLOW, 70),
        {"5m": [], "7m": [Fired(value="18")]},
    ),
    Case(
        "a TTFT p99 of 9.5 s stays quiet",
        "K3DeployTTFTSloBurn",
        _buckets(TTFT, TTFT_FAST, 70),
        {"30m": [], "70m": []},
    ),
    Case(
        "a slow burst fires while it lasts and resolves 5 minutes after it ended",
        "K3DeployTTFTSloBurn",
        {
            f'{TTFT}_bucket{{{SERVER},le="{le}"}}': cumulative([TTFT_SLOW[le]] * 20 + [TTFT_FAST[le]] * 30)
            for le in TTFT_SLOW
        },
        {"19m": [Fired(value="18")], "26m": [], "45m": []},
    ),
    Case(
        "a TPOT p99 of 90 ms against 50 ms fires after 5m",
        "K3DeployTPOTSloBurn",
        _buckets(TPOT, {"0.01": 50, "0.025": 90, "0.05": 95, "0.1": 100, "+Inf": 100}, 70),
        {"5m": [], "7m": [Fired(value="0.09")]},
    ),
    Case(
        "a TPOT p99 under 50 ms stays quiet",
        "K3DeployTPOTSloBurn",
        _buckets(TPOT, {"0.01": 50, "0.025": 90, "0.05": 100, "0.1": 100, "+Inf": 100}, 70),
        {"30m": [], "70m": []},
    ),
    Case(
        "a new XID 79 on a GPU of the group fires at once, by host and GPU, and resolves 10m later",
        "K3DeployGpuXidError",
        {f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x5 79x20"},
        {
            "5m": [],
            "6m": [Fired(labels=GPU_LABELS, value="1")],
            "15m": [Fired(labels=GPU_LABELS, value="1")],
            "17m": [],
        },
    ),
    Case(
        "an XID the driver logged before the window, still held, stays quiet (the field holds the last XID)",
        "K3DeployGpuXidError",
        {f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "79x30"},
        {"12m": [], "25m": []},
    ),
    Case(
        "the label names are the profile's",
        "K3DeployGpuXidError",
        {
            f'DCGM_FI_DEV_XID_ERRORS{{namespace="kimi-k3",pod="{K3}-0",node="n1",device="0"}}': "0 79x10",
            f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0 79x10",
        },
        {"2m": [Fired(labels={"node": "n1", "device": "0"}, value="1")]},
        sets=(
            "kubernetes.dcgm_labels.namespace=namespace",
            "kubernetes.dcgm_labels.pod=pod",
            "kubernetes.dcgm_labels.hostname=node",
            "kubernetes.dcgm_labels.gpu=device",
        ),
    ),
    Case(
        "no XID, or an XID on another namespace's GPU, stays quiet",
        "K3DeployGpuXidError",
        {
            f"DCGM_FI_DEV_XID_ERRORS{{{GPU}}}": "0x10",
            'DCGM_FI_DEV_XID_ERRORS{exported_namespace="other",exported_pod="x-0",Hostname="h",gpu="0"}': "79x10",
        },
        {"5m": []},
    ),
    Case(
        "a failed row remap fires at once",
        "K3DeployGpuRowRemapFailure",
        {f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{GPU}}}": "0x5 1x10"},
        {"5m": [], "6m": [Fired(labels=GPU_LABELS)]},
    ),
    Case(
        "no row remap failure stays quiet",
        "K3DeployGpuRowRemapFailure",
        {f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{GPU}}}": "0x15"},
        {"10m": []},
    ),
    Case(
        "NVLink recovery errors fire at once",
        "K3DeployNvlinkErrors",
        {f"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{{{GPU}}}": "0x2 1x20"},
        {"2m": [], "12m": [Fired(labels=GPU_LABELS, value="1")]},
    ),
    Case(
        "NVLink data-CRC errors alone fire too",
        "K3DeployNvlinkErrors",
        {f"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{{{GPU}}}": "0x2 10x20"},
        {"12m": [Fired(labels=GPU_LABELS, value="10")]},
    ),
    Case(
        "flat NVLink error counters stay quiet",
        "K3DeployNvlinkErrors",
        {
            f"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{{{GPU}}}": "4x20",
            f"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{{{GPU}}}": "7x20",
        },
        {"12m": []},
    ),
    Case(
        "a GPU throttled 20 % of the time fires 10m after the 10m rate passes 10 %",
        "K3DeployGpuThermalThrottling",
        # The counter starts at 0 with the series: its 10m rate ramps up over the first 10m and passes 10 % at 5m.
        # Nanoseconds (dcgm-exporter's counters CSV): 20 % of each 60 s step is 12e9 ns.
        {f"DCGM_FI_DEV_THERMAL_VIOLATION{{{GPU}}}": "0+12000000000x30"},
        {"15m": [], "17m": [Fired(labels=GPU_LABELS, value="20%")]},
    ),
    Case(
        "a GPU throttled 5 % of the time stays quiet",
        "K3DeployGpuThermalThrottling",
        {f"DCGM_FI_DEV_THERMAL_VIOLATION{{{GPU}}}": "0+3000000000x30"},
        {"20m": []},
    ),
    Case(
        "an exporter that counts microseconds is read in them when the profile says so",
        "K3DeployGpuThermalThrottling",
        {f"DCGM_FI_DEV_THERMAL_VIOLATION{{{GPU}}}": "0+12000000x30"},
        {"17m": [Fired(labels=GPU_LABELS, value="20%")]},
        sets=("kubernetes.dcgm_violation_unit=us",),
    ),
    Case(
        "the threshold is the profile's: 20 % under a 30 % limit stays quiet",
        "K3DeployGpuThermalThrottling",
        {f"DCGM_FI_DEV_THERMAL_VIOLATION{{{GPU}}}": "0+12000000000x30"},
        {"17m": [], "25m": []},
        sets=("kubernetes.gpu_thermal_throttle_max=0.3",),
    ),
)
