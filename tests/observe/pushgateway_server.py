"""Start a real Prometheus Pushgateway (Debian's `prometheus-pushgateway`, which `.ci/pushgateway` links into the
venv) on 127.0.0.1, and always stop it. Its state is in memory only (no --persistence.file): nothing outlives it."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.vllm_server import stop_group
from tests.observe.promtool import tool
from tests.ports import free_port

READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0


@contextlib.contextmanager
def start_pushgateway() -> Iterator[str]:
    """Run the Pushgateway on 127.0.0.1 until the block ends; yields its base URL."""
    binary = tool("prometheus-pushgateway")
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="k3deploy-pushgateway-") as scratch:
        log = Path(scratch) / "pushgateway.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [binary, f"--web.listen-address=127.0.0.1:{port}"],
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=scratch,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            with httpx.Client(timeout=2.0) as client:
                while True:
                    if proc.poll() is not None:
                        raise RuntimeError(f"pushgateway exited with {proc.returncode}: {log.read_text()[-4000:]}")
                    with contextlib.suppress(httpx.HTTPError):
                        if client.get(f"{base_url}/-/ready").status_code == 200:
                            break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"pushgateway not ready after {READY_TIMEOUT_S:.0f} s: {log.read_text()}")
                    time.sleep(0.1)
            yield base_url
        finally:
            stop_group(proc, STOP_GRACE_S)


def pushed(base_url: str) -> dict[str, list[dict[str, str]]]:
    """What the gateway holds: per series name, the label sets of its samples (from its /metrics)."""
    text = httpx.get(f"{base_url}/metrics", timeout=10).text
    out: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append({**sample.labels, "__value__": str(sample.value)})
    return out
