"""The `guard` section of a profile: what `k3deploy guard` treats as a sick tray and how much it may do (pure).

Kept apart from profile/model.py, which holds it as `Profile.guard`, so that module stays one screenful of sections.
"""

from __future__ import annotations

from pydantic import Field, HttpUrl

from k3deploy.profile.base import _Strict

#: Node condition types that mark a GPU tray sick when their status is "True", each set by NVSentinel:
#: - GpuNvlinkWatch, GpuMemWatch, GpuPcieWatch: its gpu-health-monitor, one condition per DCGM health watch
#:   (NVIDIA/NVSentinel health-monitors/gpu-health-monitor; "Why is a node bad? -> Check Node Conditions",
#:   https://docs.nvidia.com/nvsentinel/getting-started/integrations);
#: - SysLogsXIDError, SysLogsSXIDError (NVSwitch/NVLink errors), SysLogsGPUFallenOff: its syslog-health-monitor's
#:   checks, "the only supported checks at this time" (https://docs.nvidia.com/nvsentinel/configuration/syslog-health-monitor).
DEFAULT_FAULT_CONDITIONS = (
    "GpuNvlinkWatch",
    "GpuMemWatch",
    "GpuPcieWatch",
    "SysLogsXIDError",
    "SysLogsSXIDError",
    "SysLogsGPUFallenOff",
)


class GuardSpec(_Strict):
    """`k3deploy guard`: which signals mark a tray under a serving group sick, and the bounds on what it does."""

    fault_conditions: list[str] = Field(
        default_factory=lambda: list(DEFAULT_FAULT_CONDITIONS),
        description="Node condition types that mark a tray sick when their status is True (NVSentinel's or "
        "node-problem-detector's). Defaults: NVSentinel's GPU and syslog health monitors' conditions.",
    )
    compute_domain: bool = Field(
        True,
        description="A tray the release's ComputeDomain reports not Ready in its status.nodes is sick "
        "(as the NVIDIA DRA driver reports its IMEX daemons).",
    )
    leader_health: bool = Field(
        True,
        description="A group whose leader's /health fails (its readiness probe, as the kubelet reports it: Ready "
        "False) while every pod of the group is Running and started (its startup probe passed) is restarted "
        "(no tray is cordoned for it).",
    )
    max_cordons_per_hour: int = Field(
        2,
        ge=0,
        le=72,
        description="At most this many trays cordoned by guard in any hour (counted from the annotation guard "
        "leaves on each node it cordons); beyond it guard alerts and waits.",
    )
    confirm_after_s: float = Field(
        5.0,
        ge=0,
        le=600,
        description="Seconds between seeing a fault and reading it again before acting: a fault that has cleared "
        "by then leads to no action.",
    )
    prometheus: HttpUrl | None = Field(
        None,
        description="Base URL of a Prometheus HTTP API whose DCGM exporter series guard also reads each pass: a "
        "new XID, or NVLink recovery / data-CRC errors, on a GPU of a group within prometheus_window makes its tray "
        "sick (the PrometheusRule's expressions, on kubernetes.dcgm_labels). Null: not read.",
    )
    prometheus_window: str = Field(
        "10m", pattern=r"^[0-9]+[smh]$", description="The window of the Prometheus signal's queries, e.g. 10m."
    )
    log_tail_lines: int = Field(200, ge=1, le=10000, description="Log lines per container kept in the evidence.")
    evidence_max_bytes: int = Field(
        4 * 1024 * 1024,
        ge=64 * 1024,
        le=256 * 1024 * 1024,
        description="Upper bound of one evidence bundle; log tails are cut from their start to fit.",
    )
