"""The figures' PromQL: every expression parses with a real PromQL parser and names only the series it should."""

from __future__ import annotations

import pytest

from k3deploy.observe import promql
from k3deploy.observe.promql import FIGURES, Scope, expressions
from k3deploy.observe.scope import profile_scope
from k3deploy.profile.load import load_profile
from tests.observe.promql_names import family, metric_names, parse

SCOPES = [
    Scope(),
    Scope(namespace="kimi-k3", service="k-api", pod_prefix="k", smoke_job="k-smoke", leader_pattern="k-[0-9]+"),
]
EXTRA = [promql.waiting_growth, promql.recreated_leaders, promql.smoke_job_failed]


@pytest.mark.parametrize("scope", SCOPES)
@pytest.mark.parametrize("fn", [figure.expr for figure in FIGURES] + EXTRA)
def test_every_expression_parses(fn, scope: Scope) -> None:
    parse(fn(scope, "5m"))


def test_names_are_the_declared_families() -> None:
    named = set()
    for fn in [figure.expr for figure in FIGURES] + EXTRA:
        named |= {family(name) for name in metric_names(fn(Scope(), "2m"))}
    assert named == set(promql.VLLM_METRICS) | set(promql.DCGM_METRICS) | set(promql.KUBE_STATE_METRICS)


def test_scope_matchers_reach_every_selector() -> None:
    scope = SCOPES[1]
    for key, expr in expressions(scope).items():
        assert 'namespace="kimi-k3"' in expr, key
    assert 'service="k-api"' in expressions(scope)["output_tok_s"]
    assert 'exported_pod=~"k-.*"' in expressions(scope)["gpu_power"]
    assert 'job_name="k-smoke"' in promql.smoke_job_failed(scope)


def test_empty_scope_has_no_matchers() -> None:
    assert promql.output_tok_s(Scope(), "1m") == "sum(rate(vllm:generation_tokens_total[1m]))"


def test_label_values_are_quoted_and_regex_escaped() -> None:
    expr = promql.gpu_utilization(Scope(namespace='a"b', pod_prefix="x.y"))
    parse(expr)
    assert 'exported_namespace="a\\"b"' in expr
    assert 'exported_pod=~"x\\\\.y-.*"' in expr


@pytest.mark.parametrize("window", ["2 m", "", "1m]) or vector(1", "-5m"])
def test_bad_window_is_refused(window: str) -> None:
    with pytest.raises(ValueError):
        promql.output_tok_s(Scope(), window)


def test_parser_refuses_broken_promql() -> None:
    # The parse test above is only worth something if the parser refuses what Prometheus refuses.
    with pytest.raises(ValueError):
        parse("sum(rate(x[2m])")


def test_profile_scope_matches_the_rendered_names() -> None:
    from k3deploy.render.manifests import build

    profile = load_profile("kimi-k3-gb300-tp16")
    scope = profile_scope(profile)
    by_kind = {m.kind: m.obj for m in build(profile)}
    assert scope.service == by_kind["Service"]["metadata"]["name"]
    assert scope.namespace == by_kind["LeaderWorkerSet"]["metadata"]["namespace"]
    assert scope.pod_prefix == by_kind["LeaderWorkerSet"]["metadata"]["name"]
    smoke = [m.obj for m in build(profile) if m.kind == "Job" and m.name.endswith("-smoke")]
    assert [scope.smoke_job] == [job["metadata"]["name"] for job in smoke]


@pytest.mark.parametrize(("window", "seconds"), [("15m", 900), ("1h30m", 5400), ("500ms", 0.5), ("2d", 172800)])
def test_window_seconds(window: str, seconds: float) -> None:
    assert promql.window_seconds(window) == seconds


def test_recreated_leaders_compares_creation_time_with_the_window() -> None:
    expr = promql.recreated_leaders(SCOPES[1], "15m")
    parse(expr)
    # A group that is new (nothing 15 minutes ago) is a first rollout, not a recreation.
    assert expr == (
        'count((time() - kube_pod_created{namespace="kimi-k3",pod=~"k-[0-9]+"}) < 900)'
        ' and on() (count(kube_pod_created{namespace="kimi-k3",pod=~"k-[0-9]+"} offset 15m) > 0)'
    )
