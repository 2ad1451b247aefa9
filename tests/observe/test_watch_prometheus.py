"""`k3deploy watch --prometheus` against the tests' own Prometheus HTTP API server (tests/observe/watch_servers.py),
which refuses what Prometheus refuses: every query watch sends must parse as PromQL."""

from __future__ import annotations

import json

import httpx
import pytest

from k3deploy.observe.promql import Scope, expressions
from k3deploy.observe.scope import profile_scope
from k3deploy.profile.load import load_profile
from tests.conftest import run_cli
from tests.observe.watch_servers import PromScript, serve

WATCHED = (
    "output_tok_s",
    "decode_tok_s",
    "ttft_s",
    "running",
    "waiting",
    "kv_cache_usage",
    "prefix_cache_hit_rate",
    "acceptance_rate",
    "mean_acceptance_length",
    "per_position_acceptance",
)


def _answers(scope: Scope) -> dict[str, object]:
    exprs = expressions(scope)
    values: dict[str, object] = {
        "output_tok_s": [({}, 812.5)],
        "decode_tok_s": [({}, 301.0)],
        "ttft_s": [({}, 0.25)],
        "running": [({}, 7.0)],
        "waiting": [({}, 2.0)],
        "kv_cache_usage": [({}, 0.5)],
        "prefix_cache_hit_rate": [({}, float("nan"))],
        "acceptance_rate": 0.75,  # a scalar result
        "mean_acceptance_length": [({}, 3.25)],
        "per_position_acceptance": [({"position": "0"}, 0.9), ({"position": "1"}, 0.75), ({"position": "2"}, 0.6)],
    }
    return {exprs[key]: value for key, value in values.items()}


def _lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_figures_come_from_the_dashboards_expressions() -> None:
    script = PromScript(answers=_answers(Scope()))
    with serve(prom=script) as url:
        result = run_cli(
            "watch", "-p", "local-cpu", "--prometheus", url, "--interval", "0.2s", "--count", "2", "-o", "json"
        )
    assert result.returncode == 0, result.stderr
    lines = _lines(result.stdout)
    assert len(lines) == 2  # a Prometheus source has figures at once: no baseline scrape
    fig = lines[0]["figures"]
    assert lines[0]["source"] == "prometheus" and lines[0]["url"] == f"{url}/api/v1/query"
    assert (fig["output_tok_s"], fig["decode_tok_s"], fig["ttft_s"], fig["running"], fig["waiting"]) == (
        812.5,
        301.0,
        0.25,
        7,
        2,
    )
    assert fig["kv_cache_usage"] == 0.5 and fig["acceptance_rate"] == 0.75 and fig["mean_acceptance_length"] == 3.25
    assert fig["prefix_cache_hit_rate"] is None  # NaN: no prefix-cache queries in the window
    assert fig["per_position_acceptance"] == {"0": 0.9, "1": 0.75, "2": 0.6}
    assert lines[0]["below"] == []
    exprs = expressions(Scope())
    assert script.queries[: len(WATCHED)] == [exprs[key] for key in WATCHED]  # each exactly as the dashboard has it


def test_kubernetes_profile_queries_its_own_series_and_marks_a_miss() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", [], check_fit=False)
    script = PromScript(answers=_answers(profile_scope(profile)))
    with serve(prom=script) as url:
        result = run_cli("watch", "-p", "kimi-k3-gb300-tp16", "--prometheus", url, "--count", "1", "-o", "json")
    assert result.returncode == 0, result.stderr
    (line,) = _lines(result.stdout)
    assert all('namespace="kimi-k3"' in query for query in script.queries)
    # 301 tok/s per request is under the profile's 370; 3.25 is over its minimum acceptance length of 3.
    assert line["below"] == ["decode_tok_s"] and line["targets"] == {
        "decode_tok_s": 370.0,
        "min_acceptance_length": 3.0,
    }


def test_table_view_marks_the_figure_below_target() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", [], check_fit=False)
    with serve(prom=PromScript(answers=_answers(profile_scope(profile)))) as url:
        result = run_cli("watch", "-p", "kimi-k3-gb300-tp16", "--prometheus", url, "--count", "1")
    assert result.returncode == 0, result.stderr
    decode_row = next(line for line in result.stderr.splitlines() if "decode tok/s per request" in line)
    assert "301.0" in decode_row and "≥ 370.0" in decode_row and "below target" in decode_row
    accept_row = next(line for line in result.stderr.splitlines() if "mean acceptance length" in line)
    assert "3.25" in accept_row and "below" not in accept_row


def test_prometheus_error_on_the_first_query_is_exit_3() -> None:
    with serve(prom=PromScript(fail=1)) as url:
        result = run_cli("watch", "--prometheus", url, "--count", "1", "-o", "json")
    assert result.returncode == 3
    first, hint = result.stderr.splitlines()[:2]
    assert first.startswith(
        "error: first scrape failed: Prometheus answered 422 execution: query processing would load"
    )
    assert "(query sum(rate(vllm:generation_tokens_total[2m])))" in first
    assert hint.startswith("hint: ") and "Traceback" not in result.stderr


def test_prometheus_error_mid_run_is_a_line_and_watching_goes_on() -> None:
    # The first tick's queries answer; the second tick's first query fails; the third tick answers again.
    script = PromScript(answers=_answers(Scope()), fail_at={len(WATCHED) + 1})
    with serve(prom=script) as url:
        result = run_cli("watch", "--prometheus", url, "--interval", "0.2s", "--count", "3", "-o", "json")
    assert result.returncode == 0, result.stderr
    first, failed, recovered = _lines(result.stdout)
    assert first["figures"]["output_tok_s"] == 812.5 and recovered["figures"]["output_tok_s"] == 812.5
    assert failed["figures"] is None and failed["error"].startswith("Prometheus answered 422 execution: ")


def test_not_a_prometheus_server_is_exit_3() -> None:
    with serve() as url:  # answers 404 text to /api/v1/query
        result = run_cli("watch", "--prometheus", url, "--count", "1")
    assert result.returncode == 3
    assert "Prometheus answered 404 with no JSON" in result.stderr and "hint:" in result.stderr


# The test server itself: it is only worth what it refuses.


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"query": "sum(rate(vllm:generation_tokens_total[2m])"}, 'invalid parameter "query"'),
        ({}, 'invalid parameter "query"'),
        ({"query": "up", "timeout": "ten"}, 'invalid parameter "timeout"'),
        ({"query": "up", "time": "yesterday"}, 'invalid parameter "time"'),
    ],
)
def test_server_refuses_what_prometheus_refuses(params: dict[str, str], fragment: str) -> None:
    with serve(prom=PromScript()) as url:
        resp = httpx.get(f"{url}/api/v1/query", params=params, timeout=10)
    assert resp.status_code == 400
    body = resp.json()
    assert body["status"] == "error" and body["errorType"] == "bad_data" and fragment in body["error"]


def test_server_answers_post_forms_and_empty_vectors() -> None:
    with serve(prom=PromScript(answers={"up": 1.0})) as url:
        scalar = httpx.post(
            f"{url}/api/v1/query", data={"query": "up", "time": "2026-11-30T21:00:00Z"}, timeout=10
        ).json()
        empty = httpx.get(f"{url}/api/v1/query", params={"query": "vllm:num_requests_running"}, timeout=10).json()
        put = httpx.put(f"{url}/api/v1/query", timeout=10)
    assert (
        scalar["status"] == "success"
        and scalar["data"]["resultType"] == "scalar"
        and scalar["data"]["result"][1] == "1.0"
    )
    assert empty == {"status": "success", "data": {"resultType": "vector", "result": []}}
    assert put.status_code == 405


def test_window_option_sets_the_rate_window_of_every_query() -> None:
    script = PromScript(answers={})
    with serve(prom=script) as url:
        result = run_cli("watch", "--prometheus", url, "--window", "10m", "--count", "1", "-o", "json")
    assert result.returncode == 0, result.stderr
    rated = [q for q in script.queries if "rate(" in q]
    assert rated and all("[10m]" in q and "[2m]" not in q for q in rated)
    assert script.queries[: len(WATCHED)] == [expressions(Scope(), "10m")[key] for key in WATCHED]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--endpoint", "http://127.0.0.1:9", "--window", "5m"], "--window is the rate window"),
        (["--prometheus", "http://127.0.0.1:9", "--window", "5 minutes"], "--window: '5 minutes' is not a PromQL"),
    ],
)
def test_window_misuse_is_a_usage_error(args: list[str], fragment: str) -> None:
    result = run_cli("watch", *args, "--count", "1")
    assert result.returncode == 2
    first, hint = result.stderr.splitlines()[:2]
    assert first.startswith("error: ") and fragment in first and hint.startswith("hint: ")


def test_a_real_prometheus_answers_every_query(tmp_path) -> None:
    # The real server (scraping only itself: no vLLM series) answers gzip-encoded JSON, as a cluster's does.
    from tests.observe.prometheus_server import start_prometheus, wait_for

    with start_prometheus([], {}) as prom:
        wait_for(prom, "vector(1)", 1)
        result = run_cli("watch", "--prometheus", prom, "--count", "1", "-o", "json")
    assert result.returncode == 0, result.stderr
    (line,) = _lines(result.stdout)
    assert line["error"] is None and line["figures"]["output_tok_s"] is None and line["below"] == []


@pytest.mark.parametrize(
    "item", [{"metric": ["not", "a", "map"], "value": [0, "1"]}, {"metric": {}, "value": "x"}, None, {"value": [1]}]
)
def test_a_malformed_series_in_a_vector_is_left_out_not_the_end_of_watch(item: object) -> None:
    """Before: `metric` as a list raised AttributeError ("unexpected ... report it", exit 3)."""
    from k3deploy.observe.watch_sources import parse_query_answer

    good = {"metric": {"position": "0"}, "value": [0, "0.5"]}
    text = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [item, good]}})
    assert parse_query_answer(text, 200) == [({"position": "0"}, 0.5)]
