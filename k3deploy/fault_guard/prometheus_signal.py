"""guard's optional Prometheus signal (guard.prometheus): DCGM XID and NVLink error counters rising on a GPU of a
serving group make its tray sick. Pure: the queries from the profile, and the faults from their answers.

The expressions are the PrometheusRule's own (observe/promql_health.py gpu_xid_changes, nvlink_errors_seen), over
the group's pods' GPUs as the DCGM exporter labels them (kubernetes.dcgm_labels): a new XID (the field holds the
last XID, so a change is a new one) or NVLink recovery / data-CRC errors in `guard.prometheus_window`. The tray is the
series' host label (`kubernetes.dcgm_labels.hostname`, the node name the exporter runs on: its chart sets it from
the downward API's spec.nodeName). An answer that cannot be had marks nothing (loop.py says so): a signal that is
down never moves a group, the Node conditions and the ComputeDomain still do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from k3deploy.observe import promql_health as health
from k3deploy.observe.scope import profile_scope
from k3deploy.profile.model import Profile

#: One query's answer: (labels, value) per series, as observe/watch_sources.py parse_query_answer gives it.
Series = Iterable[tuple[Mapping[str, str], float]]
XID, NVLINK = "xid", "nvlink"


def queries(profile: Profile) -> dict[str, str]:
    """The instant queries of the signal, by name."""
    scope, window = profile_scope(profile), profile.guard.prometheus_window
    return {XID: health.gpu_xid_changes(scope, window), NVLINK: health.nvlink_errors_seen(scope, window)}


def faults_from(answers: Mapping[str, Series], profile: Profile) -> dict[str, list[str]]:
    """Tray -> why it is sick, from the answers of `queries` (a series of value 0, or without a host, marks nothing)."""
    labels, window = profile.kubernetes.dcgm_labels, profile.guard.prometheus_window
    what = {XID: "new XID error(s)", NVLINK: "NVLink recovery or data-CRC errors"}
    out: dict[str, list[str]] = {}
    for name in (XID, NVLINK):
        for series, value in answers.get(name, ()):
            host = series.get(labels.hostname)
            if not host or not value > 0:
                continue
            gpu = series.get(labels.gpu, "?")
            out.setdefault(host, []).append(f"DCGM: {what[name]} on GPU {gpu} ({value:g} in {window})")
    return {host: sorted(why) for host, why in out.items()}
