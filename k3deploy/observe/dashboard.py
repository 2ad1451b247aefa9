"""The Grafana dashboard of a deployment: one time series per figure of `observe.promql`, the profile's targets
drawn as thresholds. Pure: built with grafana-foundation-sdk (Grafana's own typed dashboard model), the JSON comes
out of its `to_json`.

The datasource is a dashboard variable (`datasource`, any Prometheus), so the same JSON works in every Grafana.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grafana_foundation_sdk.builders import common as common_builder
from grafana_foundation_sdk.builders import dashboard as dash_builder
from grafana_foundation_sdk.builders import prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common, dashboard

from k3deploy.observe import promql
from k3deploy.observe.promql import FIGURES, Figure, Scope
from k3deploy.observe.scope import profile_scope
from k3deploy.profile.model import Profile

#: KV-cache usage above this (a fraction) is the alert's threshold and the panel's red line.
KV_CACHE_LIMIT = 0.95
#: The datasource variable every panel queries through.
DATASOURCE = dashboard.DataSourceRef(type_val="prometheus", uid="${datasource}")
#: Figures by row, in order.
ROWS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Serving",
        ("output_tok_s", "decode_tok_s", "ttft_s", "running", "waiting", "kv_cache_usage", "prefix_cache_hit_rate"),
    ),
    ("Speculative decoding", ("mean_acceptance_length", "acceptance_rate", "per_position_acceptance")),
    ("GPUs (DCGM exporter)", ("gpu_utilization", "gpu_memory_used", "gpu_power", "nvlink_traffic")),
    ("Pods", ("pod_restarts",)),
)
_LEGENDS = {"per_position_acceptance": "position {{position}}"}
_GPU_LEGEND = "{{Hostname}} GPU {{gpu}}"


@dataclass(frozen=True)
class Threshold:
    """A target line on a panel: `value`, and whether figures below it (else above it) are bad."""

    value: float
    below_is_bad: bool


def thresholds(profile: Profile) -> dict[str, Threshold]:
    """The profile's targets as panel thresholds, by figure key."""
    out = {"kv_cache_usage": Threshold(KV_CACHE_LIMIT, below_is_bad=False)}
    if profile.targets.decode_tok_s is not None:
        out["decode_tok_s"] = Threshold(profile.targets.decode_tok_s, below_is_bad=True)
    if profile.targets.min_acceptance_length is not None:
        out["mean_acceptance_length"] = Threshold(profile.targets.min_acceptance_length, below_is_bad=True)
    return out


def _panel(figure: Figure, scope: Scope, window: str, threshold: Threshold | None) -> timeseries.Panel:
    legend = _LEGENDS.get(figure.key, _GPU_LEGEND if figure.key.startswith(("gpu_", "nvlink")) else figure.title)
    query = (
        prometheus.Dataquery().expr(figure.expr(scope, window)).legend_format(legend).ref_id("A").datasource(DATASOURCE)
    )
    panel = (
        timeseries.Panel()
        .title(figure.title)
        .unit(figure.unit)
        .datasource(DATASOURCE)
        .with_target(query)
        .span(8)
        .height(8)
        .min(0)
        .line_width(1)
        .fill_opacity(10)
        .legend(
            common_builder.VizLegendOptions()
            .show_legend(True)
            .display_mode(common.LegendDisplayMode.LIST)
            .placement(common.LegendPlacement.BOTTOM)
        )
        .tooltip(common_builder.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI).sort(common.SortOrder.NONE))
    )
    if threshold is not None:
        low, high = ("red", "green") if threshold.below_is_bad else ("green", "red")
        steps = [dashboard.Threshold(value=None, color=low), dashboard.Threshold(value=threshold.value, color=high)]
        panel = (
            panel.thresholds(dash_builder.ThresholdsConfig().mode(dashboard.ThresholdsMode.ABSOLUTE).steps(steps))
            .thresholds_style(common_builder.GraphThresholdsStyleConfig().mode(common.GraphTresholdsStyleMode.DASHED))
            .description(f"Target: {'at least' if threshold.below_is_bad else 'at most'} {threshold.value:g}")
        )
    return panel


def build_dashboard(profile: Profile, window: str = promql.DEFAULT_WINDOW) -> dashboard.Dashboard:
    """The profile's dashboard as Grafana's typed model."""
    scope, lines = profile_scope(profile), thresholds(profile)
    by_key = {figure.key: figure for figure in FIGURES}
    variable = dash_builder.DatasourceVariable("datasource").label("Prometheus").type("prometheus")
    builder = (
        dash_builder.Dashboard(f"k3deploy: {profile.name}")
        .uid(f"k3deploy-{profile.name}"[:40])
        .tags(["k3deploy", "vllm"])
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(variable)
    )
    panel_id = 0
    for title, keys in ROWS:
        panel_id += 1
        builder = builder.with_row(dash_builder.Row(title).id(panel_id))
        for key in keys:
            panel_id += 1
            builder = builder.with_panel(_panel(by_key[key], scope, window, lines.get(key)).id(panel_id))
    return builder.build()


def dashboard_json(profile: Profile, window: str = promql.DEFAULT_WINDOW) -> dict[str, Any]:
    """The dashboard as plain JSON data (what Grafana stores and the sidecar loads)."""
    data: dict[str, Any] = json.loads(json.dumps(build_dashboard(profile, window), cls=JSONEncoder))
    return data


def panel_queries(data: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard's panels."""
    return [target["expr"] for panel in data.get("panels", []) for target in panel.get("targets", [])]
