"""The dashboard's canary row: only with observe.canary on; Grafana's typed model reads it back unchanged; its
decode panel draws the canary's decode and output tok/s over time against the decode target (370) and the
no-speculation baseline (118); every query parses and selects the release's canary series."""

from __future__ import annotations

from typing import Any

from k3deploy.observe.dashboard import ROWS, dashboard_json
from k3deploy.profile.load import load_profile
from tests.observe.promql_names import metric_names, parse
from tests.observe.test_dashboard import _panels, _steps, _typed_round_trip

K3 = "kimi-k3-gb300-tp16"
ON = ["observe.canary.enabled=true", "observe.pushgateway_url=http://pushgateway.monitoring.svc:9091"]


def _row(data: dict[str, Any]) -> list[dict[str, Any]]:
    titles = [p["title"] for p in data["panels"]]
    start = titles.index("Performance canary")
    return data["panels"][start + 1 :]


def test_the_canary_row_is_there_only_with_the_canary_and_reads_back_unchanged() -> None:
    off = dashboard_json(load_profile(K3))
    assert [p["title"] for p in off["panels"] if p["type"] == "row"] == [t for t, _ in ROWS]
    data = dashboard_json(load_profile(K3, ON))
    assert [p["title"] for p in data["panels"] if p["type"] == "row"] == [*(t for t, _ in ROWS), "Performance canary"]
    assert _typed_round_trip(data) == data
    assert len({p["id"] for p in data["panels"]}) == len(data["panels"])
    row = _row(data)
    assert [p["title"] for p in row] == [
        "Canary decode tok/s vs target and baseline",
        "Canary acceptance length per category",
        "Canary TTFT and time since its last success",
    ]
    # Laid out under the last row, none overlapping it.
    last_other = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in data["panels"][: -len(row) - 1])
    assert min(p["gridPos"]["y"] for p in row) > last_other


def test_decode_is_drawn_against_the_target_and_the_baseline() -> None:
    panels = _panels(dashboard_json(load_profile(K3, ON)))
    decode = panels["Canary decode tok/s vs target and baseline"]
    legends = {t["legendFormat"]: t["expr"] for t in decode["targets"]}
    assert legends["target 370"] == "vector(370)"
    assert legends["baseline 118 (no speculation)"] == "vector(118)"
    assert legends["group {{group}} decode tok/s (TTFT excluded)"] == (
        'k3deploy_canary_decode_tok_s{job="k3deploy-canary",release="kimi-k3-gb300-tp16"}'
    )
    assert "group {{group}} output tok/s (TTFT included)" in legends
    assert _steps(decode) == [(None, "red"), (370, "green")]
    assert _steps(panels["Canary acceptance length per category"]) == [(None, "red"), (3.0, "green")]


def test_every_canary_query_parses_and_reads_only_canary_series() -> None:
    for panel in _row(dashboard_json(load_profile(K3, ON))):
        for target in panel["targets"]:
            parse(target["expr"])
            assert all(n.startswith("k3deploy_canary_") for n in metric_names(target["expr"])), target["expr"]
