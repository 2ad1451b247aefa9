"""Start a real Prometheus server (the `prometheus` binary `.ci/prometheus` links into the venv) on 127.0.0.1,
scraping given targets every second, and always stop it.

The scrape config gives the targets the labels the Prometheus Operator gives a ServiceMonitor's targets
(`namespace`, `service`), so a Kubernetes profile's expressions select them as they would in a cluster.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.integration.vllm_server import free_port, stop_group
from tests.observe.promtool import tool

READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0
SCRAPE_INTERVAL = "1s"


def scrape_config(
    targets: list[str], labels: Mapping[str, str], *, job: str = "vllm", honor_labels: bool = False
) -> dict[str, Any]:
    """prometheus.yml: one job scraping `targets` (host:port) at /metrics with `labels` on every series;
    `honor_labels` keeps the scraped series' own job and instance (how a Pushgateway is scraped)."""
    scrape: dict[str, Any] = {
        "job_name": job,
        "metrics_path": "/metrics",
        "static_configs": [{"targets": targets, "labels": dict(labels)}],
    }
    if honor_labels:
        scrape["honor_labels"] = True
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "scrape_configs": [scrape],
    }


def _wait_ready(proc: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with code {proc.returncode}; log:\n{log.read_text()[-4000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"{base_url}/-/ready").status_code == 200:
                    return
            time.sleep(0.2)
    raise RuntimeError(f"prometheus not ready after {READY_TIMEOUT_S:.0f} s; log:\n{log.read_text()[-4000:]}")


@contextlib.contextmanager
def start_prometheus(
    targets: list[str], labels: Mapping[str, str], *, job: str = "vllm", honor_labels: bool = False
) -> Iterator[str]:
    """Run Prometheus on 127.0.0.1 scraping `targets` until the block ends; yields its base URL."""
    binary = tool("prometheus")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="k3deploy-prometheus-") as scratch:
        work = Path(scratch)
        config = work / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(scrape_config(targets, labels, job=job, honor_labels=honor_labels)), encoding="utf-8"
        )
        log = work / "prometheus.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={work / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=work,
                start_new_session=True,
            )
        try:
            base_url = f"http://127.0.0.1:{port}"
            _wait_ready(proc, base_url, log)
            yield base_url
        finally:
            stop_group(proc, STOP_GRACE_S)


def query(base_url: str, expr: str) -> list[dict[str, Any]]:
    """An instant query's result vector (raises on an error answer)."""
    body = httpx.get(f"{base_url}/api/v1/query", params={"query": expr}, timeout=10).json()
    if body.get("status") != "success":
        raise AssertionError(f"Prometheus refused {expr}: {body}")
    data = body["data"]
    return data["result"] if data["resultType"] == "vector" else [{"metric": {}, "value": data["result"]}]


def wait_for(base_url: str, expr: str, want: float, budget_s: float = 60.0, *, at_least: bool = False) -> None:
    """Wait until the instant query's single value equals `want` (or, `at_least`, reaches it): e.g. until a scrape
    has caught up with the server."""
    deadline = time.monotonic() + budget_s
    got: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        got = query(base_url, expr)
        if got:
            value = float(got[0]["value"][1])
            if value == want or (at_least and value >= want):
                return
        time.sleep(0.5)
    raise AssertionError(f"{expr} did not reach {want} in {budget_s:.0f} s: {got}")
