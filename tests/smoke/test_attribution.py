"""Smoke's speculative gate against two servers behind one URL: the figure must be the answering server's or FAIL.

`SpreadTransport` stands in for a Kubernetes Service over two LeaderWorkerSet groups (kube-proxy picks a backend per
connection, so a scrape and the requests it should describe may meet different pods): it sends each request, the
`/metrics` scrapes included, to the next of two real scripted servers in turn. No real Service can be told which pod
to pick, so this is the smallest stand-in that makes the split deterministic.
"""

from __future__ import annotations

import itertools

import httpx

from k3deploy.profile import load_profile
from k3deploy.smoke.runner import SmokeOptions, exit_code, run_smoke
from tests.smoke.scripted_server import Script, scripted_server

FAST = ["smoke.requests=3", "smoke.output_tokens=20", "smoke.request_timeout_s=10", "smoke.overall_timeout_s=60"]


class SpreadTransport(httpx.AsyncBaseTransport):
    """Each request to the next backend in turn (round robin), whatever its path; see the module docstring."""

    def __init__(self, backends: list[str]) -> None:
        self.backends = itertools.cycle([httpx.URL(b) for b in backends])
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        backend = next(self.backends)
        request.url = request.url.copy_with(host=backend.host, port=backend.port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_two_groups_behind_one_url_make_acceptance_unattributable() -> None:
    # Group A answers one token per chunk (no draft accepted); group B accepts every draft (length 4 = 1 + k).
    with scripted_server(Script(tokens_per_chunk=[1])) as a, scripted_server(Script(tokens_per_chunk=[4])) as b:
        profile = load_profile("local-cpu", FAST)
        report = run_smoke(profile, a.url, SmokeOptions(transport=SpreadTransport([a.url, b.url])))
    check = next(c for c in report.checks if c.name == "speculative decoding")
    assert check.status.value == "fail", check
    assert check.detail.startswith("acceptance unattributable: client counted 60 tokens"), check.detail
    assert exit_code(report) == 1


def test_one_server_behind_the_url_is_attributable_and_passes() -> None:
    with scripted_server(Script(tokens_per_chunk=[4])) as b:
        report = run_smoke(load_profile("local-cpu", FAST), b.url, SmokeOptions(transport=SpreadTransport([b.url])))
    check = next(c for c in report.checks if c.name == "speculative decoding")
    assert check.status.value == "pass", check
    assert 3.0 < check.measured <= 4.0
