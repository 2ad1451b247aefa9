"""`k3deploy watch --endpoint` as a user runs it, against a scripted `/metrics` server on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli_env, run_cli
from tests.observe.watch_servers import MetricsScript, serve

DATA = Path(__file__).parent.parent / "measure" / "data"
BEFORE = (DATA / "metrics_before.prom").read_text(encoding="utf-8")
AFTER = (DATA / "metrics_after.prom").read_text(encoding="utf-8")
#: 2 requests finished between the recorded scrapes, with TPOT sums 0.00271 s -> 0.00551 s.
DECODE = 2 / (0.00551036480851024 - 0.0027129995531895283)


def _lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_json_lines_carry_the_windows_figures_and_the_targets() -> None:
    with serve(MetricsScript([BEFORE, AFTER, AFTER])) as url:
        result = run_cli(
            "watch",
            "-p",
            "local-cpu",
            "--endpoint",
            url,
            "--interval",
            "0.2s",
            "--count",
            "2",
            "--set",
            "targets.min_acceptance_length=3.5",
            "-o",
            "json",
        )
    assert result.returncode == 0, result.stderr
    first, second = _lines(result.stdout)
    fig = first["figures"]
    assert first["source"] == "metrics" and first["url"] == f"{url}/metrics" and first["error"] is None
    assert fig["output_tokens"] == 96 and fig["finished_requests"] == 2
    assert fig["decode_tok_s"] == pytest.approx(DECODE)
    assert fig["mean_acceptance_length"] == pytest.approx(1 + 51 / 22)
    assert fig["per_position_acceptance"] == {"0": 21 / 22, "1": 16 / 22, "2": 14 / 22}
    assert first["targets"] == {"decode_tok_s": 5.0, "min_acceptance_length": 3.5}
    assert first["below"] == ["mean_acceptance_length"]
    # Nothing changed between the last two scrapes: no tokens, nothing to judge.
    assert second["figures"]["output_tokens"] == 0 and second["figures"]["mean_acceptance_length"] is None
    assert second["below"] == []


def test_a_failed_scrape_mid_run_is_a_line_and_watching_goes_on() -> None:
    with serve(MetricsScript([BEFORE, 503, AFTER])) as url:
        result = run_cli("watch", "--endpoint", url, "--interval", "0.2s", "--count", "2", "-o", "json")
    assert result.returncode == 0, result.stderr
    failed, recovered = _lines(result.stdout)
    assert failed["figures"] is None and f"{url}/metrics answered 503" in failed["error"]
    # The window after a failure runs from the last good scrape.
    assert recovered["error"] is None and recovered["figures"]["output_tokens"] == 96


def test_first_scrape_failing_is_exit_3_with_error_and_hint() -> None:
    with serve(MetricsScript([BEFORE])) as url:
        pass  # the port is free again: nothing listens there
    result = run_cli("watch", "--endpoint", url, "--count", "1", "-o", "json")
    assert result.returncode == 3
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0].startswith(f"error: first scrape failed: cannot connect to {url}/metrics")
    assert result.stderr.splitlines()[1].startswith("hint: ")


def test_not_a_vllm_endpoint_is_exit_3() -> None:
    with serve(MetricsScript(["# TYPE up gauge\nup 1\n"])) as url:
        result = run_cli("watch", "--endpoint", url, "--count", "1")
    assert result.returncode == 3
    assert "exports no vLLM series" in result.stderr and "hint:" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint", "http://127.0.0.1:8000", "--prometheus", "http://127.0.0.1:9090"], "give one"),
        (["--endpoint", "http://127.0.0.1:8000", "--interval", "0"], "--interval '0' must be positive"),
        (["--endpoint", "http://127.0.0.1:8000", "--for", "soon"], "--for 'soon' is not a duration"),
        (["--endpoint", "127.0.0.1:8000"], "--endpoint"),
        (["--endpoint", "http://127.0.0.1/\x7f"], "is not a URL httpx can request"),
        (["--prometheus", "http://127.0.0.1:99999"], "--prometheus"),
        (["--prometheus", "http://127.0.0.1:9090/\x7f"], "Invalid non-printable ASCII character"),
    ],
)
def test_usage_errors_are_exit_2(args: list[str], message: str) -> None:
    result = run_cli("watch", *args, "--count", "1")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "\nhint: " in result.stderr


def test_a_kubernetes_profile_without_an_endpoint_is_read_through_a_forward_to_its_leader() -> None:
    """Without a cluster to reach, the forward `up` would use cannot be opened: exit 3 naming the by-hand way (the
    forward itself runs on the real plane: tests/realk8s/test_watch_bench_forward.py). Before: exit 2, "say where
    to read its figures"."""
    result = run_cli("watch", "-p", "kimi-k3-gb300-tp16", "--kubeconfig", "/nonexistent", "--count", "1")
    assert result.returncode == 3, result.stderr
    assert result.stderr.startswith("error: watch could not find the leader to reach: ")
    assert "hint: give --endpoint URL: e.g. `kubectl -n kimi-k3 port-forward svc/kimi-k3-gb300-tp16-api 8000:8000`" in (
        result.stderr
    )


def test_for_bounds_the_run() -> None:
    with serve(MetricsScript([BEFORE, AFTER])) as url:
        result = run_cli("watch", "--endpoint", url, "--interval", "0.3s", "--for", "1s", "-o", "json")
    assert result.returncode == 0, result.stderr
    # Ticks at 0.3, 0.6, 0.9 s; the next (1.2 s) is past --for. A starved host may skip a tick, never add one.
    assert 1 <= len(_lines(result.stdout)) <= 3


def test_ctrl_c_ends_cleanly_with_exit_0() -> None:
    with serve(MetricsScript([BEFORE, AFTER])) as url:
        proc = subprocess.Popen(
            [sys.executable, "-m", "k3deploy", "watch", "--endpoint", url, "--interval", "0.2s", "-o", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )
        try:
            assert proc.stdout is not None
            first = json.loads(proc.stdout.readline())  # it is watching
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert first["figures"]["output_tokens"] == 96
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr


def test_local_profile_without_endpoint_reads_the_profiles_server(tmp_path: Path) -> None:
    with serve(MetricsScript([BEFORE, AFTER])) as url:
        port = url.rsplit(":", 1)[1]
        # No server recorded in this state folder: watch dials the profile's host and port, as `up` would serve.
        result = run_cli(
            "watch",
            "-p",
            "local-cpu",
            "--set",
            f"local.state_dir={tmp_path}",
            "--set",
            f"vllm.port={port}",
            "--count",
            "1",
            "--interval",
            "0.2s",
            "-o",
            "json",
        )
    assert result.returncode == 0, result.stderr
    (line,) = _lines(result.stdout)
    assert line["url"] == f"{url}/metrics" and line["figures"]["output_tokens"] == 96


def test_kubernetes_profile_reads_its_endpoint_override() -> None:
    with serve(MetricsScript([BEFORE, AFTER])) as url:
        result = run_cli(
            "watch",
            "-p",
            "kimi-k3-gb300-tp16",
            "--set",
            f"kubernetes.endpoint_override={url}/v1",
            "--count",
            "1",
            "--interval",
            "0.2s",
            "-o",
            "json",
        )
    assert result.returncode == 0, result.stderr
    (line,) = _lines(result.stdout)
    assert line["url"] == f"{url}/metrics"  # /v1 of the override dropped, as smoke drops it
    # The GB300 profile's targets: 715 tok/s per request is over 370, 1 + 51/22 = 3.32 over 3.0.
    assert line["targets"] == {"decode_tok_s": 370.0, "min_acceptance_length": 3.0} and line["below"] == []


def test_sigterm_ends_a_watch_with_143_not_0() -> None:
    """Before: a SIGTERM (a pod's stop, `timeout`, systemd) was taken for Ctrl-C and the watch exited 0."""
    with serve(MetricsScript([BEFORE, AFTER])) as url:
        proc = subprocess.Popen(
            [sys.executable, "-m", "k3deploy", "watch", "--endpoint", url, "--interval", "0.2s", "-o", "json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )
        try:
            assert proc.stdout is not None
            json.loads(proc.stdout.readline())  # it is watching
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr


def test_a_malformed_series_is_a_note_not_the_end_of_the_watch() -> None:
    broken = BEFORE + 'vllm:num_requests_running{model_name="x"} not-a-number\n'
    with serve(MetricsScript([broken, AFTER])) as url:
        result = run_cli("watch", "--endpoint", url, "--interval", "0.2s", "--count", "1", "-o", "json")
    assert result.returncode == 0, result.stderr
    (line,) = _lines(result.stdout)
    assert line["figures"]["output_tokens"] == 96


def test_a_trickling_metrics_endpoint_is_a_failed_scrape_within_its_timeout() -> None:
    from k3deploy.errors import ScrapeError
    from k3deploy.observe.watch_sources import MetricsSource
    from tests.trickling_server import Trickle, trickling_server

    trickle = Trickle(body=BEFORE.encode() * 20, content_type="text/plain", interval_s=0.05)
    with trickling_server(trickle) as url:
        source = MetricsSource(url, timeout_s=1.0)
        try:
            with pytest.raises(ScrapeError):
                source.sample()
        finally:
            source.close()
    assert trickle.sent < len(trickle.body) // 4


def test_credentials_in_the_endpoint_are_printed_nowhere() -> None:
    """`--endpoint http://user:token@host` authenticates as given; its lines, errors and table show `***@`."""
    with serve(MetricsScript([BEFORE, AFTER, 503])) as url:
        secret = url.replace("http://", "http://alice:s3cret-pw@")
        lines = run_cli("watch", "--endpoint", secret, "--interval", "0.2s", "--count", "2", "-o", "json")
        table = run_cli("watch", "--endpoint", secret, "--interval", "0.2s", "--count", "1")
    with serve(MetricsScript([BEFORE])) as gone:
        pass  # nothing listens there any more: the first scrape fails
    unreachable = run_cli("watch", "--endpoint", gone.replace("http://", "http://bob:hunter2@"), "--count", "1")
    assert lines.returncode == 0, lines.stderr
    good, failed = _lines(lines.stdout)
    assert good["url"].startswith("http://***@127.0.0.1:") and failed["error"].startswith("http://***@127.0.0.1:")
    for done in (lines, table, unreachable):
        shown = done.stdout + done.stderr
        assert "s3cret-pw" not in shown and "alice" not in shown and "hunter2" not in shown and "bob" not in shown
    assert unreachable.returncode == 3 and "http://***@127.0.0.1:" in unreachable.stderr
