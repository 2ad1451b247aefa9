"""guard's Prometheus signal (fault_guard/prometheus_signal.py; loop.py asks): the queries are the PrometheusRule's
GPU expressions over the profile's DCGM labels and window, parsed by a real PromQL parser; their answers mark the
series' host sick, with why; zero or host-less series mark nothing; asked of a Prometheus API stand-in
(tests/observe/watch_servers.py, which refuses what Prometheus refuses) through the guard's own source, and a
failing server marks nothing and is said."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from k3deploy.fault_guard.loop import Guard
from k3deploy.fault_guard.prometheus_signal import NVLINK, XID, faults_from, queries
from k3deploy.profile import load_profile
from tests.observe.promql_names import metric_names
from tests.observe.watch_servers import PromScript, serve

K3 = "kimi-k3-gb300-tp16"


def test_the_queries_read_the_groups_gpus_over_the_window() -> None:
    profile = load_profile(K3, ["guard.prometheus_window=5m", "kubernetes.dcgm_labels.hostname=node"])
    got = queries(profile)
    assert metric_names(got[XID]) == {"DCGM_FI_DEV_XID_ERRORS"}
    assert metric_names(got[NVLINK]) == {
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    }
    for expr in got.values():
        assert "[5m]" in expr and "by (node, gpu)" in expr
        assert 'exported_namespace="kimi-k3"' in expr and f'exported_pod=~"({K3}|{K3}-green)' in expr


def test_rising_counters_mark_their_host_and_quiet_or_hostless_series_do_not() -> None:
    profile = load_profile(K3)
    answers = {
        XID: [({"Hostname": "gb300-2", "gpu": "3"}, 1.0), ({"Hostname": "gb300-1", "gpu": "0"}, 0.0)],
        NVLINK: [({"Hostname": "gb300-2", "gpu": "1"}, 12.0), ({"gpu": "2"}, 5.0)],
    }
    assert faults_from(answers, profile) == {
        "gb300-2": [
            "DCGM: NVLink recovery or data-CRC errors on GPU 1 (12 in 10m)",
            "DCGM: new XID error(s) on GPU 3 (1 in 10m)",
        ]
    }
    assert faults_from({}, profile) == {}


def guard(profile_sets: list[str], said: list[str]) -> Any:
    return Guard(
        api=None, profile=load_profile(K3, profile_sets), namespace="kimi-k3", evidence_dir=Path("."), say=said.append
    )  # type: ignore[arg-type]


def test_the_guard_asks_prometheus_and_a_failing_server_marks_nothing() -> None:
    profile = load_profile(K3)
    script = PromScript(answers={queries(profile)[XID]: [({"Hostname": "gb300-5", "gpu": "0"}, 2.0)]})
    said: list[str] = []
    with serve(prom=script) as url:
        got = guard([f"guard.prometheus={url}"], said)._prometheus_faults()
    assert got == {"gb300-5": ["DCGM: new XID error(s) on GPU 0 (2 in 10m)"]}
    assert script.queries == [queries(profile)[XID], queries(profile)[NVLINK]] and said == []

    failing = PromScript(fail=1)
    with serve(prom=failing) as url:
        assert guard([f"guard.prometheus={url}"], said)._prometheus_faults() == {}
    [line] = said
    assert line.startswith("Prometheus signal not read this pass: Prometheus answered 422 execution")
    assert guard([], said)._prometheus_faults() == {}  # unset: not asked
