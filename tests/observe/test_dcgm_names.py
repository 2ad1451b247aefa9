"""Every DCGM series the dashboard reads is one the DCGM exporter serves by default.

The list is a copy of NVIDIA/dcgm-exporter etc/default-counters.csv (its enabled lines; source and commit in the
file's header): tests cannot download it.
"""

from __future__ import annotations

from pathlib import Path

from k3deploy.observe import promql
from k3deploy.observe.dashboard import dashboard_json
from k3deploy.profile.load import load_profile
from tests.observe.grafana import panel_queries
from tests.observe.promql_names import metric_names

COUNTERS = Path(__file__).with_name("dcgm_default_counters.csv")


def _default_counters() -> dict[str, str]:
    rows = [line.split(",") for line in COUNTERS.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return {name: kind for name, kind in rows}


def test_the_copy_is_the_upstream_list() -> None:
    counters = _default_counters()
    assert "github.com/NVIDIA/dcgm-exporter/blob/" in COUNTERS.read_text(encoding="utf-8").splitlines()[1]
    assert counters["DCGM_FI_DEV_GPU_UTIL"] == "gauge" and counters["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"] == "counter"
    # Commented out upstream, so not served by default: a dashboard reading it would stay empty.
    assert "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0" not in counters and "DCGM_FI_PROF_SM_ACTIVE" not in counters


def test_every_dcgm_series_of_the_dashboard_is_a_default_counter() -> None:
    counters = _default_counters()
    names = set().union(*(metric_names(q) for q in panel_queries(dashboard_json(load_profile("kimi-k3-gb300-tp16")))))
    dcgm = {name for name in names if name.startswith("DCGM_")}
    assert dcgm == set(promql.DCGM_METRICS)
    assert dcgm <= set(counters)


def test_rates_are_taken_of_counters_only() -> None:
    # rate() of a gauge is meaningless; the NVLink figure rates the one DCGM counter it reads.
    counters = _default_counters()
    for name in promql.DCGM_METRICS:
        expr = next(f.expr(promql.Scope(), "2m") for f in promql.FIGURES if name in f.expr(promql.Scope(), "2m"))
        assert ("rate(" in expr) == (counters[name] == "counter"), name
