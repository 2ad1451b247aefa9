"""`k3deploy bench --push` as a user runs it (subprocess) against the scripted server, pushing to a real Pushgateway
(Debian's prometheus-pushgateway, `.ci/pushgateway`): the canary's series land under the job and grouping key, a
failed run leaves the last success stamp, and bad or unreachable gateways are one clean error."""

from __future__ import annotations

from pathlib import Path

from k3deploy.observe import canary_series as series
from k3deploy.report.bench import BenchReport
from tests.bench.test_cli import assert_clean_error
from tests.conftest import run_cli
from tests.observe.pushgateway_server import pushed, start_pushgateway
from tests.smoke.scripted_server import Script, scripted_server

ARGS = ("-p", "local-cpu", "--subset", "throughput", "--num-prompts", "1", "--output-tokens", "16")


def _only(gateway: str, name: str) -> dict[str, str]:
    (labels,) = pushed(gateway)[name]
    return labels


def test_a_run_pushes_every_series_under_the_grouping_key_and_a_failed_run_keeps_the_last_success(
    tmp_path: Path,
) -> None:
    with start_pushgateway() as gateway:
        with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
            ok = run_cli(
                "bench",
                "--endpoint",
                srv.url,
                *ARGS,
                "--push",
                "profile",
                "--set",
                f"observe.pushgateway_url={gateway}",
                "--group",
                "2",
                "--report",
                str(tmp_path / "ok.json"),
            )
        assert ok.returncode == 0, ok.stderr
        assert f"pushed to {gateway}" in ok.stderr
        report = BenchReport.load(tmp_path / "ok.json")
        overall = report.overall[0]
        decode = _only(gateway, series.DECODE)
        key = {"job": "k3deploy-canary", "release": "local-cpu", "group": "2", "image_digest": "unpinned"}
        assert {k: decode[k] for k in key} == key and decode["draft_revision"] == "unpinned"
        assert float(decode["__value__"]) == overall.decode_tok_s.median
        assert float(_only(gateway, series.OUTPUT)["__value__"]) == overall.output_tok_s
        assert float(_only(gateway, series.TTFT)["__value__"]) == overall.ttft_ms.median / 1000
        assert float(_only(gateway, series.FAILED)["__value__"]) == 0
        categories = {s["category"] for s in pushed(gateway)[series.ACCEPTANCE]}
        assert categories == set(report.settings.categories)
        stamp = float(_only(gateway, series.LAST_SUCCESS)["__value__"])
        assert report.finished_at is not None and stamp == report.finished_at.timestamp()

        with scripted_server(Script(completion_status=500)) as broken:
            failed = run_cli(
                "bench",
                "--endpoint",
                broken.url,
                *ARGS,
                "--push",
                gateway,
                "--group",
                "2",
                "--report",
                str(tmp_path / "f.json"),
            )
        assert failed.returncode == 1, failed.stderr
        assert float(_only(gateway, series.FAILED)["__value__"]) == 3  # one prompt of each of three tiers
        assert float(_only(gateway, series.LAST_SUCCESS)["__value__"]) == stamp  # the failed run left it


def test_a_bad_push_is_refused_before_the_run_and_an_unreachable_gateway_after_the_report(tmp_path: Path) -> None:
    with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
        assert_clean_error(
            run_cli("bench", "--endpoint", srv.url, *ARGS, "--push", "profile"), 2, "no observe.pushgateway_url"
        )
        assert_clean_error(run_cli("bench", "--endpoint", srv.url, *ARGS, "--push", "ftp://x"), 2, "not an http(s)")
        assert srv.bodies == []  # refused before a request was sent
        report = tmp_path / "r.json"
        down = run_cli("bench", "--endpoint", srv.url, *ARGS, "--push", "http://127.0.0.1:9", "--report", str(report))
    assert_clean_error(down, 3, "push to the Pushgateway http://127.0.0.1:9 failed")
    assert BenchReport.load(report).overall  # the figures were kept
    assert_clean_error(run_cli("bench", "--ab", *ARGS, "--push", "http://x:1"), 2, "--push pushes one run")
