"""Every HTTP client path of k3deploy ends by its whole deadline when a server trickles its status line and headers.

A read timeout bounds each `recv`; a server that sends its head one byte at a time, each just inside that timeout,
holds a client bounded only per read for ever. Each test below points one client path at such a server (2 KiB of
head, a byte every 20 ms: 40 s to send it all) with a bound of about a second and asserts that the client stopped
reading early: `head_sent`, the head bytes that left before the client went away, is far below the whole head.
Counting bytes, not seconds, keeps the tests independent of the machine's load.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from k3deploy.errors import EnvironmentProblem
from k3deploy.kube.deadline import Deadline
from k3deploy.measure.client import EndpointError, SmokeClient, run_fast
from k3deploy.net.capped import BudgetSpent, answers_200, budget, get_capped
from k3deploy.observe.watch_sources import MetricsSource, PrometheusSource, ScrapeError
from k3deploy.pin.hub import HubClient
from k3deploy.pin.registry import RegistryClient
from k3deploy.preflight.run import image_platforms
from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from tests.trickling_server import Trickle, trickling_server

#: The whole head is ~2,080 bytes; a client bounded at ~1 s reads ~50 of them.
HEAD_BYTES = 2000


def _trickle() -> Trickle:
    return Trickle(body=b"{}", head_interval_s=0.02)


def _stopped_early(trickle: Trickle) -> bool:
    return 0 < trickle.head_sent < HEAD_BYTES // 4


def test_get_capped_ends_a_trickled_head_at_the_callers_deadline() -> None:
    trickle = _trickle()
    with trickling_server(trickle) as url, httpx.Client() as http, pytest.raises(BudgetSpent):
        get_capped(http, url, limit=1024, error_limit=1024, deadline=budget(1.0), read_timeout_s=5.0)
    assert _stopped_early(trickle), trickle.head_sent


def test_get_capped_without_a_deadline_ends_a_trickled_head_after_four_read_timeouts() -> None:
    trickle = _trickle()
    with trickling_server(trickle) as url, httpx.Client() as http, pytest.raises(BudgetSpent):
        get_capped(http, url, limit=1024, error_limit=1024, deadline=budget(None), read_timeout_s=0.25)
    assert _stopped_early(trickle), trickle.head_sent


def test_get_capped_reads_an_answer_whose_head_arrives_in_time() -> None:
    """The bound ends only a head that outlives it: a slow but finished head is read as usual."""
    trickle = Trickle(body=b'{"ok": 1}', head_interval_s=0.0, interval_s=0.0)
    with trickling_server(trickle) as url, httpx.Client() as http:
        response, body = get_capped(http, url, limit=1024, error_limit=1024, deadline=budget(30.0), read_timeout_s=5)
    assert response.status_code == 200 and body == b'{"ok": 1}'


def test_pins_registry_client_ends_a_trickled_head_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    trickle = _trickle()
    with trickling_server(trickle) as url:
        monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", url)
        with (
            RegistryClient(timeout_s=5.0, deadline=Deadline(1.0)) as client,
            pytest.raises(EnvironmentProblem, match="cannot reach registry"),
        ):
            client.resolve("vllm/vllm-openai:v0.32.0")
    assert _stopped_early(trickle), trickle.head_sent


def test_pins_hub_client_ends_a_trickled_head_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    trickle = _trickle()
    with trickling_server(trickle) as url:
        monkeypatch.setenv("HF_ENDPOINT", url)
        with HubClient(timeout_s=5.0, deadline=Deadline(1.0)) as hub, pytest.raises(EnvironmentProblem):
            hub.resolve("moonshotai/Kimi-K3", "main")
    assert _stopped_early(trickle), trickle.head_sent


def test_preflights_registry_check_is_a_warn_when_the_head_trickles(monkeypatch: pytest.MonkeyPatch) -> None:
    trickle = _trickle()
    with trickling_server(trickle) as url:
        monkeypatch.setenv("K3DEPLOY_REGISTRY_URL", url)
        result = image_platforms(
            load_profile("kimi-k3-gb300-tp16", ["vllm.image=vllm/vllm-openai:v0.32.0"]), Deadline(1.0)
        )
    assert result.status is Status.WARN, result
    assert _stopped_early(trickle), trickle.head_sent


def test_watchs_metrics_scrape_ends_a_trickled_head_at_its_timeout() -> None:
    trickle = _trickle()
    with trickling_server(trickle) as url:
        source = MetricsSource(url, timeout_s=1.0)
        try:
            with pytest.raises(ScrapeError, match="did not answer in time"):
                source.sample()
        finally:
            source.close()
    assert _stopped_early(trickle), trickle.head_sent


def test_watchs_prometheus_query_ends_a_trickled_head_at_its_timeout() -> None:
    trickle = _trickle()
    with trickling_server(trickle) as url:
        source = PrometheusSource(url, {"up": "up"}, timeout_s=1.0)
        try:
            with pytest.raises(ScrapeError):
                source.query("up")
        finally:
            source.close()
    assert _stopped_early(trickle), trickle.head_sent


def test_the_local_targets_health_probe_is_false_when_the_head_trickles() -> None:
    trickle = _trickle()
    with trickling_server(trickle) as url:
        assert answers_200(f"{url}/health", 1.0) is False
    assert _stopped_early(trickle), trickle.head_sent


@pytest.mark.parametrize("call", ["models", "metrics", "health"])
def test_smoke_and_bench_plain_gets_end_a_trickled_head_at_the_request_timeout(call: str) -> None:
    """smoke and bench share SmokeClient: /v1/models, /metrics and /health each end by smoke.request_timeout_s."""
    trickle = _trickle()

    async def go() -> None:
        async with SmokeClient(url, request_timeout_s=1.0) as client:
            await getattr(client, call)()

    with trickling_server(trickle) as url, pytest.raises(EndpointError) as info:
        run_fast(go())
    assert info.value.kind == "timeout" and "smoke.request_timeout_s" in info.value.message
    assert _stopped_early(trickle), trickle.head_sent


def test_smoke_and_bench_streams_end_a_trickled_head_at_the_request_timeout() -> None:
    trickle = _trickle()

    async def go() -> str | None:
        async with SmokeClient(url, request_timeout_s=1.0) as client:
            raw = await client.stream("/v1/completions", {"model": "m", "prompt": "hi", "max_tokens": 4})
            return raw.error

    with trickling_server(trickle) as url:
        error = asyncio.run(go())
    assert error is not None and "timed out" in error
    assert _stopped_early(trickle), trickle.head_sent


@pytest.mark.parametrize("args", [["status", "--timeout", "3s"], ["up", "--timeout", "4s"]], ids=["status", "up"])
def test_the_kubernetes_clients_requests_end_a_trickled_head_at_the_commands_timeout(
    tmp_path: Path, args: list[str]
) -> None:
    """The official client (urllib3) reads the head inside `getresponse`; kube/walled.py shuts the socket at the
    request's bound, so `status`/`up --timeout` end with exit 3 and a timeout message (before: the whole head)."""
    from tests.kube.test_timeouts import _run

    # A byte every 0.2 s: the whole head takes 400 s; the deadline plus the 10 s of grace its retries get, ~14 s.
    trickle = Trickle(body=b"{}", head_interval_s=0.2)
    with trickling_server(trickle) as url:
        lines = _run(tmp_path, url, *args)
    # Which message depends on where the deadline (and its grace for the retries) ran out; both name it.
    assert lines[0].startswith(f"error: the Kubernetes API at {url}") and "the command's deadline of" in lines[0]
    assert _stopped_early(trickle), trickle.head_sent
