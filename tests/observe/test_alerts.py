"""The PrometheusRule: each alert parses, reads the declared series, carries its annotations, links a runbook section
the documentation site has (docs/operations/runbooks.md), and the object validates against the upstream CRD."""

from __future__ import annotations

import copy
import re
from typing import Any

import jsonschema
import pytest

from k3deploy.errors import ProfileError
from k3deploy.observe import promql
from k3deploy.observe import promql_health as health
from k3deploy.observe.alerts import alerts, rule_groups, runbook_anchor
from k3deploy.profile.load import load_profile
from k3deploy.profile.observe_spec import RUNBOOK_BASE_URL
from k3deploy.render.manifests import build
from tests.conftest import REPO_ROOT
from tests.observe.promql_names import family, metric_names, parse
from tests.render.kube_schemas import crd_schema, validator
from tests.support import crds

K3 = "kimi-k3-gb300-tp16"
AVAILABILITY = ["K3DeployLeaderNotReady", "K3DeployVllmMetricsAbsent", "K3DeployNoSuccessfulRequests"]
LATENCY = ["K3DeployTTFTSloBurn", "K3DeployTPOTSloBurn"]
GPU = ["K3DeployGpuXidError", "K3DeployGpuRowRemapFailure", "K3DeployNvlinkErrors", "K3DeployGpuThermalThrottling"]
SERVING = [
    "K3DeployAcceptanceLengthLow",
    "K3DeployDecodeSlow",
    "K3DeployKVCacheFull",
    "K3DeployWaitingRequestsGrowing",
    "K3DeployGroupRestarted",
    "K3DeploySmokeJobFailed",
]
EXPECTED = AVAILABILITY + LATENCY + SERVING + GPU


def _rule() -> dict[str, Any]:
    return next(m.obj for m in build(load_profile(K3)) if m.kind == "PrometheusRule")


def test_the_alerts_of_the_issue() -> None:
    assert [a.name for a in alerts(load_profile(K3))] == EXPECTED


@pytest.mark.parametrize("alert", alerts(load_profile(K3)), ids=lambda a: a.name)
def test_every_alert_parses_and_reads_known_series(alert) -> None:
    parse(alert.expr)
    known = set(promql.VLLM_METRICS) | set(promql.DCGM_METRICS) | set(health.ALL_KUBE_STATE_METRICS)
    known |= set(health.HEALTH_VLLM_METRICS) | set(health.HEALTH_DCGM_METRICS)
    assert {family(name) for name in metric_names(alert.expr)} <= known
    assert alert.summary and alert.description


def test_thresholds_are_the_profile_targets() -> None:
    by_name = {
        a.name: a for a in alerts(load_profile(K3, ["targets.decode_tok_s=250", "targets.min_acceptance_length=2.5"]))
    }
    assert "< 250) and on () (max(avg_over_time(vllm:num_requests_running" in by_name["K3DeployDecodeSlow"].expr
    assert by_name["K3DeployAcceptanceLengthLow"].expr.endswith("< 2.5")
    assert by_name["K3DeployAcceptanceLengthLow"].for_ == "30m"
    assert by_name["K3DeployAcceptanceLengthLow"].rule(RUNBOOK_BASE_URL)["keep_firing_for"] == "15m"
    assert "[1h]" in by_name["K3DeployAcceptanceLengthLow"].expr
    assert by_name["K3DeployTTFTSloBurn"].expr.count("> 10)") == 2
    assert by_name["K3DeployKVCacheFull"].expr.endswith("> 0.95")


def test_targets_left_unset_drop_their_alerts() -> None:
    names = [
        a.name
        for a in alerts(
            load_profile(
                K3,
                [
                    "targets.decode_tok_s=null",
                    "targets.min_acceptance_length=null",
                    "targets.ttft_p99_s=null",
                    "targets.tpot_p99_s=null",
                ],
            )
        )
    ]
    assert names == AVAILABILITY + SERVING[2:] + GPU


def test_every_runbook_link_lands_on_a_runbook_heading() -> None:
    """The page's headings as MkDocs anchors them (Python-Markdown's toc slugify); the built site itself is checked
    by tests/docs/test_runbook_links.py."""
    page = (REPO_ROOT / "docs" / "operations" / "runbooks.md").read_text(encoding="utf-8")
    anchors = {
        re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", h).strip().lower())
        for h in re.findall(r"^#+ (.+)$", page, re.MULTILINE)
    }
    # With the in-cluster guard, its alert too.
    for group in rule_groups(load_profile(K3)) + rule_groups(load_profile(K3, ["kubernetes.guard=true"])):
        for rule in group["rules"]:
            url = rule["annotations"]["runbook_url"]
            assert url == f"{RUNBOOK_BASE_URL}#{runbook_anchor(rule['alert'])}"
            assert runbook_anchor(rule["alert"]) in anchors, rule["alert"]


def test_runbook_links_follow_the_profiles_base_url() -> None:
    """A site that mirrors the docs: every alert, the canary's too, links into it."""
    mirror = "https://docs.example.internal/k3deploy/operations/runbooks/"
    sets = [f"observe.runbook_base_url={mirror}", "observe.canary.enabled=true", "kubernetes.guard=true"]
    sets.append("observe.pushgateway_url=http://pushgateway.monitoring.svc:9091")
    rules = [r for g in rule_groups(load_profile(K3, sets)) for r in g["rules"] if "alert" in r]
    assert len(rules) == 20  # every alert of the page: 15 serving, the guard's, 4 of the canary
    for rule in rules:
        assert rule["annotations"]["runbook_url"] == f"{mirror}#{runbook_anchor(rule['alert'])}"


def test_a_runbook_base_url_with_its_own_anchor_is_a_profile_error() -> None:
    with pytest.raises(ProfileError, match="runbook_base_url"):
        load_profile(K3, ["observe.runbook_base_url=https://docs.example.internal/runbooks/#top"])


def test_rule_labels_reach_the_prometheus_rule_selector() -> None:
    obj = next(
        m.obj
        for m in build(load_profile(K3, ["kubernetes.service_monitor_labels={release: kube-prometheus-stack}"]))
        if m.kind == "PrometheusRule"
    )
    assert obj["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_prometheus_rule_matches_the_upstream_crd() -> None:
    crds.require()
    validator(crd_schema("PrometheusRule", "v1")).validate(_rule())


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "groups", 0, "rules", 0, "for"), "15 minutes"),
        (("spec", "groups", 0, "rules", 0, "exprr"), "up"),
        (("spec", "groups", 0, "interval"), "often"),
    ],
)
def test_upstream_crd_refuses_a_broken_rule(path: tuple[Any, ...], value: str) -> None:
    crds.require()
    bad = copy.deepcopy(_rule())
    node: Any = bad
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        validator(crd_schema("PrometheusRule", "v1")).validate(bad)
