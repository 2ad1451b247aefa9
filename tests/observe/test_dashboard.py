"""The Grafana dashboard: Grafana's typed model reads it back unchanged, every panel's query parses, targets are
thresholds, and the ConfigMap carries the sidecar's label."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models.dashboard import Dashboard

from k3deploy.observe.dashboard import (
    KV_CACHE_LIMIT,
    PANELS,
    ROWS,
    dashboard_json,
)
from k3deploy.observe.promql import FIGURES
from k3deploy.profile.load import load_profile
from k3deploy.render.manifests import build
from tests.observe.grafana import interpolate, panel_queries, raw_panel_queries
from tests.observe.promql_names import parse

K3 = "kimi-k3-gb300-tp16"


def _typed_round_trip(data: dict[str, Any]) -> dict[str, Any]:
    # With the plugins registered, panels, options and queries decode into their typed models (timeseries options,
    # Prometheus queries), so a field a model lacks is dropped and a mistyped one raises.
    register_default_plugins()
    return json.loads(json.dumps(Dashboard.from_json(data), cls=JSONEncoder))


def _panels(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {panel["title"]: panel for panel in data["panels"] if panel["type"] != "row"}


def test_grafana_model_reads_the_dashboard_back_unchanged() -> None:
    data = dashboard_json(load_profile(K3))
    assert _typed_round_trip(data) == data


def test_the_round_trip_catches_a_field_grafana_does_not_know() -> None:
    data = dashboard_json(load_profile(K3))
    for path in (("targets", 0, "exprr"), ("fieldConfig", "defaults", "unitt"), ("options", "legendd")):
        bad = copy.deepcopy(data)
        node: Any = bad["panels"][1]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = "x"
        assert _typed_round_trip(bad) != bad, path


def test_every_figure_has_one_panel_with_a_parsing_query() -> None:
    data = dashboard_json(load_profile(K3))
    assert sorted(_panels(data)) == sorted([f.title for f in FIGURES] + [p.title for p in PANELS])
    assert [p["title"] for p in data["panels"] if p["type"] == "row"] == [title for title, _ in ROWS]
    queries = panel_queries(data)
    assert len(queries) == len(FIGURES) + 3 * 3 + 3  # three quantiles of three histograms, three request panels
    for query in queries:
        parse(query)
        assert 'namespace="kimi-k3"' in query or 'exported_namespace="kimi-k3"' in query
    assert len({p["id"] for p in data["panels"]}) == len(data["panels"])


def _steps(panel: dict[str, Any]) -> list[tuple[float | None, str]]:
    config = panel["fieldConfig"]["defaults"]
    assert config["custom"]["thresholdsStyle"]["mode"] == "dashed"
    return [(step["value"], step["color"]) for step in config["thresholds"]["steps"]]


def test_targets_are_drawn_as_thresholds() -> None:
    panels = _panels(dashboard_json(load_profile(K3)))
    assert _steps(panels["Per-request decode tok/s"]) == [(None, "red"), (370, "green")]
    assert _steps(panels["Mean acceptance length"]) == [(None, "red"), (3.0, "green")]
    assert _steps(panels["KV-cache usage"]) == [(None, "green"), (KV_CACHE_LIMIT, "red")]
    assert "thresholds" not in panels["Output tok/s"]["fieldConfig"]["defaults"]


def test_changed_targets_move_the_thresholds() -> None:
    profile = load_profile(K3, ["targets.decode_tok_s=300", "targets.min_acceptance_length=null"])
    panels = _panels(dashboard_json(profile))
    assert _steps(panels["Per-request decode tok/s"]) == [(None, "red"), (300, "green")]
    assert "thresholds" not in panels["Mean acceptance length"]["fieldConfig"]["defaults"]


def test_every_panel_queries_the_datasource_variable() -> None:
    data = dashboard_json(load_profile(K3))
    assert [v["name"] for v in data["templating"]["list"]] == [
        "datasource",
        "namespace",
        "dcgm_namespace_label",
        "dcgm_pod_label",
        "dcgm_hostname_label",
        "dcgm_gpu_label",
    ]
    assert data["templating"]["list"][0]["query"] == "prometheus"
    for panel in _panels(data).values():
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert all(t["datasource"] == panel["datasource"] for t in panel["targets"])


def _by_kind(sets: list[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for manifest in build(load_profile(K3, sets)):
        out.setdefault(manifest.kind, []).append(manifest.obj)
    return out


def test_configmap_holds_the_dashboard_under_the_sidecar_label() -> None:
    maps = {m["metadata"]["name"]: m for m in _by_kind([])["ConfigMap"]}
    cm = maps[f"{K3}-grafana-dashboard"]
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["namespace"] == "kimi-k3"
    assert json.loads(cm["data"][f"{K3}.json"]) == dashboard_json(load_profile(K3))
    moved = {
        m["metadata"]["name"]: m for m in _by_kind(["kubernetes.grafana_dashboard_namespace=monitoring"])["ConfigMap"]
    }
    assert moved[f"{K3}-grafana-dashboard"]["metadata"]["namespace"] == "monitoring"


@pytest.mark.parametrize(
    ("sets", "rendered"),
    [
        ([], True),
        (["kubernetes.service_monitor=false"], False),
        (["kubernetes.service_monitor=false", "kubernetes.monitoring=true"], True),
        (["kubernetes.monitoring=false"], False),
    ],
)
def test_the_switch_follows_the_service_monitor_by_default(sets: list[str], rendered: bool) -> None:
    kinds = _by_kind(sets)
    names = {m["metadata"]["name"] for m in kinds["ConfigMap"]}
    assert (f"{K3}-grafana-dashboard" in names) is rendered
    assert ("PrometheusRule" in kinds) is rendered


def test_namespace_and_dcgm_labels_are_variables_defaulting_to_the_profile() -> None:
    profile = load_profile(K3, ["kubernetes.namespace=serving", "kubernetes.dcgm_labels.hostname=node"])
    data = dashboard_json(profile)
    defaults = {v["name"]: v["query"] for v in data["templating"]["list"] if v["type"] == "textbox"}
    assert defaults == {
        "namespace": "serving",
        "dcgm_namespace_label": "exported_namespace",
        "dcgm_pod_label": "exported_pod",
        "dcgm_hostname_label": "node",
        "dcgm_gpu_label": "gpu",
    }
    raw = raw_panel_queries(data)
    assert all('="$namespace"' in q for q in raw)
    gpu = _panels(data)["GPU power"]
    assert gpu["targets"][0]["expr"].startswith(
        "sum by ($dcgm_hostname_label, $dcgm_gpu_label) (DCGM_FI_DEV_POWER_USAGE{"
    )
    assert gpu["targets"][0]["legendFormat"] == "{{node}} GPU {{gpu}}"
    resolved = panel_queries(data)
    assert 'sum by (node, gpu) (DCGM_FI_DEV_POWER_USAGE{exported_namespace="serving"' in "\n".join(resolved)
    assert "$" not in "".join(resolved)


def test_latency_panels_draw_three_quantiles() -> None:
    panels = _panels(dashboard_json(load_profile(K3)))
    ttft = panels["Time to first token (p50 / p90 / p99)"]
    assert [t["legendFormat"] for t in ttft["targets"]] == ["p50", "p90", "p99"]
    assert [t["refId"] for t in ttft["targets"]] == ["A", "B", "C"]
    assert ttft["targets"][2]["expr"].startswith("histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token")


def test_interpolate_is_grafanas_substitution() -> None:
    values = {"a": "x", "ab": "y"}
    assert interpolate("$ab ${a}b $a $zz", values) == "y xb x $zz"
