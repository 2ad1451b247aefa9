"""The Grafana dashboard of a deployment: one time series per figure of `observe.promql`, the profile's targets
drawn as thresholds. Pure: built as the JSON data grafana-foundation-sdk (Grafana's own typed dashboard model) writes,
field for field, without loading it (its ~20 ms were a twelfth of `render`); tests/observe/test_dashboard.py has
that model read the data back unchanged, so a field it does not know or a wrong type fails there.

The datasource is a dashboard variable (`datasource`, any Prometheus), so the same JSON works in every Grafana; so
are the namespace and the DCGM exporter's label names (textboxes defaulting to the profile's), which the queries
name as `$namespace`, `$dcgm_pod_label`, ...: Grafana substitutes them before querying (`panel_queries` does the
same with the defaults).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from k3deploy.kobject import JsonObject
from k3deploy.observe import promql
from k3deploy.observe import promql_health as health
from k3deploy.observe.canary_dashboard import ROW_TITLE, canary_panels
from k3deploy.observe.dashboard_model import PanelSpec, Threshold
from k3deploy.observe.promql import FIGURES, Scope
from k3deploy.observe.scope import profile_scope
from k3deploy.profile.model import Profile

#: KV-cache usage above this (a fraction) is the alert's threshold and the panel's red line.
KV_CACHE_LIMIT = 0.95
#: The datasource variable every panel queries through.
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
#: Grafana's grid: 24 columns; each panel is a third of a row wide and 8 units high, under its row's header.
GRID_WIDTH, PANEL_WIDTH, PANEL_HEIGHT = 24, 8, 8
#: Figures by row, in order (keys of promql.FIGURES and of PANELS below).
ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Serving",
        ("output_tok_s", "decode_tok_s", "ttft_s", "running", "waiting", "kv_cache_usage", "prefix_cache_hit_rate"),
    ),
    ("Latency", ("ttft_quantiles", "tpot_quantiles", "itl_quantiles")),
    ("Requests", ("request_rate", "failed_requests", "preemptions")),
    ("Speculative decoding", ("mean_acceptance_length", "acceptance_rate", "per_position_acceptance")),
    ("GPUs (DCGM exporter)", ("gpu_utilization", "gpu_memory_used", "gpu_power", "nvlink_traffic")),
    ("Pods", ("pod_restarts",)),
)
QUANTILES = (0.5, 0.9, 0.99)
#: Dashboard variables: name, label, and the profile's value it defaults to.
_VARIABLES: tuple[tuple[str, str, Callable[[Profile], str]], ...] = (
    ("namespace", "Namespace", lambda p: p.kubernetes.namespace),
    ("dcgm_namespace_label", "DCGM namespace label", lambda p: p.kubernetes.dcgm_labels.namespace),
    ("dcgm_pod_label", "DCGM pod label", lambda p: p.kubernetes.dcgm_labels.pod),
    ("dcgm_hostname_label", "DCGM host label", lambda p: p.kubernetes.dcgm_labels.hostname),
    ("dcgm_gpu_label", "DCGM GPU label", lambda p: p.kubernetes.dcgm_labels.gpu),
)
_LEGENDS = {"per_position_acceptance": "position {{position}}"}
__all__ = ["PanelSpec", "Threshold", "dashboard_json", "panel_specs", "thresholds"]


def _quantiles(metric: str) -> Callable[[Scope, str], list[tuple[str, str]]]:
    def queries(scope: Scope, window: str) -> list[tuple[str, str]]:
        return [(f"p{q * 100:g}", health.latency_quantile(metric, scope, window, q)) for q in QUANTILES]

    return queries


def _one(legend: str, expr: Callable[[Scope, str], str]) -> Callable[[Scope, str], list[tuple[str, str]]]:
    return lambda scope, window: [(legend, expr(scope, window))]


#: Panels beyond the one-expression figures of promql.FIGURES.
PANELS: tuple[PanelSpec, ...] = (
    PanelSpec("ttft_quantiles", "Time to first token (p50 / p90 / p99)", "s", _quantiles(promql.TTFT)),
    PanelSpec("tpot_quantiles", "Time per output token (p50 / p90 / p99)", "s", _quantiles(promql.TPOT)),
    PanelSpec("itl_quantiles", "Inter-token latency (p50 / p90 / p99)", "s", _quantiles(health.ITL)),
    PanelSpec("request_rate", "Finished requests/s", "reqps", _one("{{finished_reason}}", health.request_rate)),
    PanelSpec(
        "failed_requests", "Failed requests/s (abort, error)", "reqps", _one("failed", health.failed_request_rate)
    ),
    PanelSpec("preemptions", "Preemptions/s", "short", _one("preemptions", health.preemption_rate)),
)


def panel_specs(profile: Profile) -> dict[str, PanelSpec]:
    """Every panel by key: the figures (legends by their kind), then PANELS."""
    dcgm = profile.kubernetes.dcgm_labels
    gpu_legend = f"{{{{{dcgm.hostname}}}}} GPU {{{{{dcgm.gpu}}}}}"
    out = {}
    for figure in FIGURES:
        legend = _LEGENDS.get(figure.key, gpu_legend if figure.key.startswith(("gpu_", "nvlink")) else figure.title)
        out[figure.key] = PanelSpec(figure.key, figure.title, figure.unit, _one(legend, figure.expr))
    return out | {spec.key: spec for spec in PANELS}


def thresholds(profile: Profile) -> dict[str, Threshold]:
    """The profile's targets as panel thresholds, by figure key."""
    out = {"kv_cache_usage": Threshold(KV_CACHE_LIMIT, below_is_bad=False)}
    if profile.targets.decode_tok_s is not None:
        out["decode_tok_s"] = Threshold(profile.targets.decode_tok_s, below_is_bad=True)
    if profile.targets.min_acceptance_length is not None:
        out["mean_acceptance_length"] = Threshold(profile.targets.min_acceptance_length, below_is_bad=True)
    return out


def _panel(
    spec: PanelSpec, scope: Scope, window: str, threshold: Threshold | None, panel_id: int, at: dict[str, int]
) -> JsonObject:
    """One time series panel at grid position `at`, as the SDK's timeseries.Panel builder writes it."""
    custom: JsonObject = {"fillOpacity": 10, "lineWidth": 1}
    defaults: JsonObject = {"custom": custom, "min": 0, "unit": spec.unit}
    panel: JsonObject = {
        "datasource": dict(DATASOURCE),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "gridPos": {"h": PANEL_HEIGHT, "w": PANEL_WIDTH, **at},
        "id": panel_id,
        "options": {
            "legend": {"calcs": [], "displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "none"},
        },
        "repeatDirection": "h",
        "targets": [
            {"datasource": dict(DATASOURCE), "expr": expr, "legendFormat": legend, "refId": ref}
            for ref, (legend, expr) in zip("ABCDEFGH", spec.queries(scope, window), strict=False)
        ],
        "title": spec.title,
        "transformations": [],
        "transparent": False,
        "type": "timeseries",
    }
    if threshold is not None:
        low, high = ("red", "green") if threshold.below_is_bad else ("green", "red")
        defaults["thresholds"] = {
            "mode": "absolute",
            "steps": [{"color": low, "value": None}, {"color": high, "value": threshold.value}],
        }
        custom["thresholdsStyle"] = {"mode": "dashed"}
        panel["description"] = f"Target: {'at least' if threshold.below_is_bad else 'at most'} {threshold.value:g}"
    return panel


def _variable(name: str, label: str, kind: str, query: str) -> JsonObject:
    """A dashboard variable as the SDK's DatasourceVariable and TextBoxVariable builders write it."""
    return {
        "auto": False,
        "auto_count": 30,
        "auto_min": "10s",
        "hide": 0,
        "id": "00000000-0000-0000-0000-000000000000",
        "includeAll": False,
        "label": label,
        "multi": False,
        "name": name,
        "query": query,
        "skipUrlSync": False,
        "type": kind,
    }


def dashboard_json(profile: Profile, window: str = promql.DEFAULT_WINDOW) -> JsonObject:
    """The dashboard as plain JSON data (what Grafana stores and the sidecar loads)."""
    scope, lines, by_key = dashboard_scope(profile), thresholds(profile), panel_specs(profile)
    variables = [_variable("datasource", "Prometheus", "datasource", "prometheus")]
    for name, label, default in _VARIABLES:
        value = default(profile)
        variable = _variable(name, label, "textbox", value)
        variable["current"] = {"selected": True, "text": value, "value": value}
        variables.append(variable)
    panels: list[JsonObject] = []
    y = 0
    canary = canary_panels(profile)
    by_key |= {spec.key: spec for spec, _ in canary}
    lines |= {spec.key: line for spec, line in canary if line is not None}
    rows = (*ROWS, (ROW_TITLE, tuple(spec.key for spec, _ in canary))) if canary else ROWS
    for title, keys in rows:
        # The SDK's Dashboard builder lays out a row's header across the grid, then its panels left to right.
        panels.append(
            {
                "collapsed": False,
                "gridPos": {"h": 1, "w": GRID_WIDTH, "x": 0, "y": y},
                "id": len(panels) + 1,
                "panels": [],
                "title": title,
                "type": "row",
            }
        )
        y += 1
        for i, key in enumerate(keys):
            at = {"x": i * PANEL_WIDTH % GRID_WIDTH, "y": y + i * PANEL_WIDTH // GRID_WIDTH * PANEL_HEIGHT}
            panels.append(_panel(by_key[key], scope, window, lines.get(key), len(panels) + 1, at))
        y += -(-len(keys) * PANEL_WIDTH // GRID_WIDTH) * PANEL_HEIGHT
    return {
        "annotations": {},
        "editable": True,
        "fiscalYearStartMonth": 0,
        "graphTooltip": 0,
        "panels": panels,
        "refresh": "30s",
        "schemaVersion": 36,
        "style": "dark",
        "tags": ["k3deploy", "vllm"],
        "templating": {"list": variables},
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "browser",
        "title": f"k3deploy: {profile.name}",
        "uid": f"k3deploy-{profile.name}"[:40],
    }


def dashboard_scope(profile: Profile) -> Scope:
    """The profile's scope with the namespace and the DCGM label names left to the dashboard's variables."""
    return dataclasses.replace(
        profile_scope(profile),
        namespace="$namespace",
        gpu_namespace_label="$dcgm_namespace_label",
        gpu_pod_label="$dcgm_pod_label",
        gpu_host_label="$dcgm_hostname_label",
        gpu_index_label="$dcgm_gpu_label",
    )
