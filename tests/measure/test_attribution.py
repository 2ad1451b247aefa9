"""Smoke's speculative gate against two servers behind one URL: the figure must be the answering server's, or it is
reported unattributable (WARN; FAIL with smoke.require_attribution).

`spread` stands in for a Kubernetes Service over two LeaderWorkerSet groups (kube-proxy picks a backend per
connection, so a scrape and the requests it should describe may meet different pods): an aiohttp client middleware
(aiohttp/client_middlewares.py, the hook the client's one session takes) that sends each request, the `/metrics`
scrapes and the streams alike, to the next of two real scripted servers in turn. No real Service can be told which
pod to pick, so this is the smallest stand-in that makes the split deterministic.
"""

from __future__ import annotations

import itertools

import aiohttp
from yarl import URL

from k3deploy.profile import load_profile
from k3deploy.report.model import CheckResult
from k3deploy.smoke.runner import SmokeOptions, exit_code, run_smoke
from tests.smoke.scripted_server import Script, scripted_server

FAST = ["smoke.requests=3", "smoke.output_tokens=20", "smoke.request_timeout_s=10", "smoke.overall_timeout_s=60"]


def spread(backends: list[str]) -> tuple[aiohttp.ClientMiddlewareType, ...]:
    """A middleware sending each request to the next backend in turn (round robin), whatever its path."""
    turn = itertools.cycle([URL(b) for b in backends])

    async def to_next(request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        backend = next(turn)
        # The request is dialled by its URL (ClientRequest.connection_key): pointing it elsewhere picks the backend.
        request.url = request.url.with_host(backend.host or "").with_port(backend.port)
        return await handler(request)

    return (to_next,)


def _two_groups(strict: bool) -> tuple[CheckResult, int]:
    # Group A answers one token per chunk (no draft accepted); group B accepts every draft (length 4 = 1 + k).
    settings = [*FAST, f"smoke.require_attribution={str(strict).lower()}"]
    with scripted_server(Script(tokens_per_chunk=[1])) as a, scripted_server(Script(tokens_per_chunk=[4])) as b:
        report = run_smoke(load_profile("local-cpu", settings), a.url, SmokeOptions(middlewares=spread([a.url, b.url])))
    return next(c for c in report.checks if c.name == "speculative decoding"), exit_code(report)


def test_two_groups_behind_one_url_make_acceptance_unattributable_a_warn() -> None:
    check, code = _two_groups(strict=False)
    assert check.status.value == "warn", check
    assert check.detail.startswith("acceptance unattributable: client counted 60 tokens"), check.detail
    assert check.measured is None
    assert code == 0  # nothing a gate would roll back


def test_two_groups_behind_one_url_fail_when_the_profile_requires_attribution() -> None:
    check, code = _two_groups(strict=True)
    assert check.status.value == "fail", check
    assert check.detail.startswith("acceptance unattributable: client counted 60 tokens"), check.detail
    assert code == 1


def test_one_server_behind_the_url_is_attributable_and_passes() -> None:
    with scripted_server(Script(tokens_per_chunk=[4])) as b:
        report = run_smoke(load_profile("local-cpu", FAST), b.url, SmokeOptions(middlewares=spread([b.url])))
    check = next(c for c in report.checks if c.name == "speculative decoding")
    assert check.status.value == "pass", check
    assert 3.0 < check.measured <= 4.0
