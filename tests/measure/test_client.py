"""measure/client.py: one aiohttp session carries every request, and its plain GETs keep their bounds on it.

Real sockets throughout: the scripted server (tests/smoke/scripted_server.py) for a healthy endpoint, the
trickling server (tests/trickling_server.py) for a body sent a byte at a time, the stalling server
(tests/kube/stalling_server.py) for a body that stops. Bytes sent, not seconds, show where a bound ended a read.
"""

from __future__ import annotations

import aiohttp
import pytest

from k3deploy.measure.client import EndpointError, SmokeClient, run_fast
from tests.kube.stalling_server import stalling_server
from tests.smoke.scripted_server import MODEL, scripted_server
from tests.trickling_server import Trickle, trickling_server


def test_plain_gets_and_streams_go_through_the_one_session() -> None:
    """A middleware of the session sees each request: the plain GETs as well as the stream."""
    seen: list[tuple[str, str]] = []

    async def record(request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        seen.append((request.method, request.url.path))
        return await handler(request)

    async def go(url: str) -> tuple[int, list[str], str | None]:
        async with SmokeClient(url, request_timeout_s=10.0, middlewares=[record]) as client:
            status = await client.health()
            models = await client.models()
            await client.metrics()
            raw = await client.stream("/v1/completions", {"model": MODEL, "prompt": "hi", "max_tokens": 8})
            return status, models, raw.error

    with scripted_server() as srv:
        status, models, error = run_fast(go(srv.url))
    assert (status, models, error) == (200, [MODEL], None)
    assert seen == [("GET", "/health"), ("GET", "/v1/models"), ("GET", "/metrics"), ("POST", "/v1/completions")]


def test_a_plain_get_whose_body_trickles_ends_at_its_whole_bound() -> None:
    """Each byte arrives well inside the read timeout: only the whole bound (connect + read timeout) ends it."""
    trickle = Trickle(body=b"x" * 4000, interval_s=0.02)

    async def go(url: str) -> None:
        async with SmokeClient(url, request_timeout_s=1.0) as client:
            await client.metrics()

    with trickling_server(trickle) as url, pytest.raises(EndpointError) as info:
        run_fast(go(url))
    assert info.value.kind == "timeout" and "its whole answer took over 2 s" in info.value.message
    assert 0 < trickle.sent < 4000 // 4, trickle.sent


def test_a_plain_get_whose_body_stops_ends_at_its_read_timeout() -> None:
    """A head, part of the body, then nothing: the per-read timeout ends the GET before the whole bound."""

    async def go(url: str) -> None:
        async with SmokeClient(url, request_timeout_s=0.5) as client:
            await client.models()

    with stalling_server("stall") as url, pytest.raises(EndpointError) as info:
        run_fast(go(url))
    assert info.value.kind == "timeout"
    assert info.value.message == f"{url}/v1/models did not answer in time (ReadTimeout)"
