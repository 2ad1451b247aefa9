"""The alerts evaluated by Prometheus's own rule engine: `promtool check rules` on every rendered rule set, and
`promtool test rules` cases for every alert, with series that must fire it (its labels, its `for:` timing, its
rendered annotations) and series that must not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from k3deploy.observe.alerts import alerts, rule_groups
from k3deploy.profile.load import load_profile
from k3deploy.render.manifests import build
from tests.conftest import REPO_ROOT
from tests.observe.health_cases import HEALTH_CASES
from tests.observe.promtool import K3, KSM, SERVER, Case, Fired, check_rules, cumulative, run_rule_tests

#: Rendered variants: the default set, targets unset, no speculation, an inference pool in front.
VARIANTS = (
    [],
    ["targets.decode_tok_s=null", "targets.min_acceptance_length=null"],
    ["speculative=null"],
    ["kubernetes.routing=inference-pool", "kubernetes.gateway_namespace=envoy-gateway-system"],
    ["targets.ttft_p99_s=null", "targets.tpot_p99_s=null", "kubernetes.dcgm_labels.hostname=node"],
)


def _groups(sets: list[str] | None = None) -> list[dict[str, Any]]:
    return rule_groups(load_profile(K3, sets or []))


@pytest.mark.parametrize("sets", VARIANTS, ids=lambda s: ",".join(s) or "default")
def test_promtool_accepts_every_rendered_rule_set(sets: list[str], tmp_path: Path) -> None:
    (rule,) = [m.obj for m in build(load_profile(K3, sets)) if m.kind == "PrometheusRule"]
    result = check_rules(rule["spec"]["groups"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts(load_profile(K3, sets)))} rules found" in result.stdout


def test_promtool_accepts_every_committed_rule_set(tmp_path: Path) -> None:
    committed = sorted((REPO_ROOT / "manifests").glob("*/*-prometheusrule-*.yaml"))
    assert committed
    for path in committed:
        rule = yaml.safe_load(path.read_text(encoding="utf-8"))
        result = check_rules(rule["spec"]["groups"], tmp_path)
        assert result.returncode == 0, f"{path}: {result.stdout}{result.stderr}"


def test_promtool_refuses_a_broken_rule(tmp_path: Path) -> None:
    groups = _groups()
    groups[0]["rules"][0]["expr"] = "sum(rate(vllm:generation_tokens_total[5m])"
    result = check_rules(groups, tmp_path)
    assert result.returncode != 0 and "parse error" in result.stdout + result.stderr


CASES = (
    Case(
        "acceptance length 2.5 under 3 fires after its 30m",
        "K3DeployAcceptanceLengthLow",
        {
            f"vllm:spec_decode_num_accepted_tokens_total{{{SERVER}}}": "0+90x60",
            f"vllm:spec_decode_num_drafts_total{{{SERVER}}}": "0+60x60",
        },
        {"30m": [], "32m": [Fired(value="2.50")], "60m": [Fired(value="2.50")]},
    ),
    Case(
        "acceptance length 3.5 stays quiet",
        "K3DeployAcceptanceLengthLow",
        {
            f"vllm:spec_decode_num_accepted_tokens_total{{{SERVER}}}": "0+150x60",
            f"vllm:spec_decode_num_drafts_total{{{SERVER}}}": "0+60x60",
        },
        {"40m": [], "60m": []},
    ),
    Case(
        "mixed traffic (20 minutes at length 5, 10 at 1.5, over and over) stays quiet",
        "K3DeployAcceptanceLengthLow",
        {
            f"vllm:spec_decode_num_accepted_tokens_total{{{SERVER}}}": cumulative(([240.0] * 20 + [30.0] * 10) * 6),
            f"vllm:spec_decode_num_drafts_total{{{SERVER}}}": "0+60x180",
        },
        {f"{m}m": [] for m in range(30, 181, 10)},
    ),
    Case(
        "a recovery holds the alert 15m (keep_firing_for) before it resolves",
        "K3DeployAcceptanceLengthLow",
        # Length 2 for an hour, then 9: the hour's mean passes 3 between 68m (2.93) and 69m (3.05).
        {
            f"vllm:spec_decode_num_accepted_tokens_total{{{SERVER}}}": cumulative([60.0] * 60 + [480.0] * 40),
            f"vllm:spec_decode_num_drafts_total{{{SERVER}}}": "0+60x100",
        },
        {"68m": [Fired(value="2.93")], "80m": [Fired(value="2.93")], "83m": [Fired(value="2.93")], "85m": []},
    ),
    Case(
        "no drafts at all (no traffic) stays quiet",
        "K3DeployAcceptanceLengthLow",
        {
            f"vllm:spec_decode_num_accepted_tokens_total{{{SERVER}}}": "0x60",
            f"vllm:spec_decode_num_drafts_total{{{SERVER}}}": "0x60",
        },
        {"40m": [], "60m": []},
    ),
    Case(
        "decode at 300 tok/s per request at batch 1 fires after its 15m",
        "K3DeployDecodeSlow",
        {
            f"vllm:request_time_per_output_token_seconds_count{{{SERVER}}}": "0+60x40",
            f"vllm:request_time_per_output_token_seconds_sum{{{SERVER}}}": "0+0.2x40",
            f"vllm:num_requests_running{{{SERVER}}}": "1x40",
        },
        {"15m": [], "17m": [Fired(value="300")]},
    ),
    Case(
        "decode at 300 tok/s per request with 8 running stays quiet (the target is a batch-1 figure)",
        "K3DeployDecodeSlow",
        {
            f"vllm:request_time_per_output_token_seconds_count{{{SERVER}}}": "0+60x40",
            f"vllm:request_time_per_output_token_seconds_sum{{{SERVER}}}": "0+0.2x40",
            f"vllm:num_requests_running{{{SERVER}}}": "8x40",
        },
        {"20m": [], "39m": []},
    ),
    Case(
        "decode at 500 tok/s per request at batch 1 stays quiet",
        "K3DeployDecodeSlow",
        {
            f"vllm:request_time_per_output_token_seconds_count{{{SERVER}}}": "0+60x40",
            f"vllm:request_time_per_output_token_seconds_sum{{{SERVER}}}": "0+0.12x40",
            f"vllm:num_requests_running{{{SERVER}}}": "1x40",
        },
        {"20m": [], "39m": []},
    ),
    Case(
        "KV cache at 97 % fires after 5m",
        "K3DeployKVCacheFull",
        {f"vllm:kv_cache_usage_perc{{{SERVER}}}": "0.97x20"},
        {"4m": [], "6m": [Fired(value="97%")]},
    ),
    Case(
        "KV cache at 90 % stays quiet",
        "K3DeployKVCacheFull",
        {f"vllm:kv_cache_usage_perc{{{SERVER}}}": "0.9x20"},
        {"10m": []},
    ),
    Case(
        "a queue growing one request a minute fires after 10m",
        "K3DeployWaitingRequestsGrowing",
        {f"vllm:num_requests_waiting{{{SERVER}}}": "0+1x40"},
        {"10m": [], "12m": [Fired(value="0.0167")]},
    ),
    Case(
        "a long but steady queue stays quiet",
        "K3DeployWaitingRequestsGrowing",
        {f"vllm:num_requests_waiting{{{SERVER}}}": "30x40"},
        {"20m": []},
    ),
    Case(
        "a serving container restart fires at once",
        "K3DeployGroupRestarted",
        {f'kube_pod_container_status_restarts_total{{{KSM},pod="{K3}-0-1",container="vllm"}}': "0x10 1x30"},
        {"10m": [], "12m": [Fired()]},
    ),
    Case(
        "a recreated leader fires at once",
        "K3DeployGroupRestarted",
        # The value is the pod's creation time: the leader was created again at 21m.
        {f'kube_pod_created{{{KSM},pod="{K3}-0"}}': "0x20 1260x20"},
        {"20m": [], "22m": [Fired()]},
    ),
    Case(
        "a worker of the green colour restarting fires at once",
        "K3DeployGroupRestarted",
        {f'kube_pod_container_status_restarts_total{{{KSM},pod="{K3}-green-0-3",container="vllm"}}': "0x10 1x30"},
        {"10m": [], "12m": [Fired()]},
    ),
    Case(
        "a first rollout, the set's Job pods and another deployment's restarts stay quiet",
        "K3DeployGroupRestarted",
        {
            f'kube_pod_created{{{KSM},pod="{K3}-0"}}': "0x30",
            f'kube_pod_container_status_restarts_total{{{KSM},pod="other-0",container="vllm"}}': "0x10 1x30",
            f'kube_pod_container_status_restarts_total{{{KSM},pod="{K3}-smoke-x7k2p",container="smoke"}}': "0x10 1x30",
            f'kube_pod_container_status_restarts_total{{{KSM},pod="{K3}-prefetch-9qz4c",container="prefetch"}}': (
                "0x10 1x30"
            ),
        },
        {"5m": [], "12m": []},
    ),
    Case(
        "the smoke Job's Failed condition fires at once",
        "K3DeploySmokeJobFailed",
        {
            f'kube_job_failed{{{KSM},job_name="{K3}-smoke",condition="true"}}': "0x5 1x10",
            f'kube_job_failed{{{KSM},job_name="{K3}-smoke",condition="false"}}': "1x5 0x10",
        },
        {"5m": [], "6m": [Fired()]},
    ),
    Case(
        "a running smoke Job and another Job's failure stay quiet",
        "K3DeploySmokeJobFailed",
        {
            f'kube_job_failed{{{KSM},job_name="{K3}-smoke",condition="true"}}': "0x10",
            f'kube_job_failed{{{KSM},job_name="other-smoke",condition="true"}}': "1x10",
        },
        {"5m": []},
    ),
)


@pytest.mark.parametrize("case", (*CASES, *HEALTH_CASES), ids=lambda c: c.name)
def test_alert_fires_when_it_must_and_only_then(case: Case, tmp_path: Path) -> None:
    result = run_rule_tests(_groups(list(case.sets)), [case], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    assert len(alerts(load_profile(K3))) == 15
    for alert in alerts(load_profile(K3)):
        cases = [c for c in (*CASES, *HEALTH_CASES) if c.alert == alert.name]
        assert any(any(c.expect.values()) for c in cases), f"{alert.name}: no case where it fires"
        assert any(not any(c.expect.values()) for c in cases), f"{alert.name}: no case where it stays quiet"


def test_a_wrong_expectation_fails(tmp_path: Path) -> None:
    # The runner is only worth what it refuses: the same series with the value misprinted, or a label too many.
    good = next(c for c in CASES if c.alert == "K3DeployKVCacheFull")
    for firing in ([Fired(value="96%")], [Fired(labels={"pod": f"{K3}-0"}, value="97%")], []):
        bad = Case(good.name, good.alert, good.series, {"6m": firing})
        result = run_rule_tests(_groups(), [bad], tmp_path)
        assert result.returncode != 0 and "FAILED" in result.stdout + result.stderr, firing
