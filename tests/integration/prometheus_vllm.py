"""A real Prometheus scraping a real vLLM server, labelled like the built-in Kubernetes profile's ServiceMonitor
target, for the integration tier's `watch --prometheus` and dashboard tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
from prometheus_client.parser import text_string_to_metric_families

from k3deploy.observe.promql import GENERATION_TOKENS
from tests.observe.prometheus_server import start_prometheus, wait_for

K3 = "kimi-k3-gb300-tp16"
#: The labels the Prometheus Operator puts on the API Service's target of the built-in Kubernetes profile.
TARGET_LABELS = {"namespace": "kimi-k3", "service": f"{K3}-api"}


def tokens_now(server: str) -> float:
    """vLLM's generated-token counter as its /metrics says now (summed over engines)."""
    text = httpx.get(f"{server}/metrics", timeout=30).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == GENERATION_TOKENS
    )


@contextlib.contextmanager
def prometheus_scraping(server: str) -> Iterator[str]:
    """A Prometheus (base URL) that has scraped `server` once already, so later increases all fall in its data."""
    with start_prometheus([server.removeprefix("http://")], TARGET_LABELS) as prom:
        wait_for(prom, 'up{job="vllm"}', 1)
        yield prom


def caught_up(prom: str, server: str) -> None:
    """Wait until Prometheus has scraped every token the server has generated so far."""
    wait_for(prom, f"sum({GENERATION_TOKENS})", tokens_now(server))
