"""The context of the Grafana dashboard ConfigMap and the PrometheusRule (rendered when kubernetes.monitoring_on). Pure."""

from __future__ import annotations

import json
from collections.abc import Callable

from k3deploy.observe.alerts import rule_groups
from k3deploy.observe.dashboard import dashboard_json
from k3deploy.profile.model import Profile

#: The label Grafana's dashboard sidecar selects ConfigMaps on (grafana/helm-charts charts/grafana values.yaml
#: sidecar.dashboards.label / labelValue defaults).
GRAFANA_DASHBOARD_LABEL = {"grafana_dashboard": "1"}


def monitoring_context(profile: Profile, labels: Callable[[str], dict[str, str]]) -> dict[str, object]:
    """Context of the dashboard ConfigMap and the PrometheusRule (built only when they are rendered)."""
    if not profile.kubernetes.monitoring_on:
        return {}
    kube = profile.kubernetes
    return {
        "dashboard_namespace": kube.grafana_dashboard_namespace or kube.namespace,
        "dashboard_labels": {**labels("dashboard"), **GRAFANA_DASHBOARD_LABEL},
        "dashboard_key": f"{profile.name}.json",
        "dashboard_json": json.dumps(dashboard_json(profile), indent=2, sort_keys=True) + "\n",
        "alert_labels": {**labels("alerts"), **kube.service_monitor_labels},
        "alert_groups": rule_groups(profile),
    }
