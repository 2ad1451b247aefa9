"""`k3deploy bench --push` as a user runs it (subprocess) against the scripted server, pushing to a real Pushgateway
(Debian's prometheus-pushgateway, `.ci/pushgateway`): the canary's series land under the job and grouping key, a
failed run leaves the last success stamp, and bad or unreachable gateways are one clean error."""

from __future__ import annotations

from pathlib import Path

from k3deploy.observe import canary_series as series
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.report.bench import BenchReport
from tests.bench.test_cli import assert_clean_error
from tests.conftest import run_cli
from tests.observe.pushgateway_server import pushed, start_pushgateway
from tests.smoke.scripted_server import MODEL, Script, scripted_server

K3 = "kimi-k3-gb300-tp16"
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


def test_the_rendered_canary_command_runs_and_pushes(tmp_path: Path) -> None:
    """The CronJob's own arguments, as rendered, run by the real CLI: only where it reaches is swapped for the test's
    (the leader for the scripted server, the mounted ConfigMaps for files holding their data, the gateway for a real
    one); --report-configmap needs the API server (tests/realk8s/render/test_canary.py)."""
    with start_pushgateway() as gateway:
        sets = [
            "observe.canary.enabled=true",
            f"observe.pushgateway_url={gateway}",
            "observe.canary.output_tokens=32",
            f"model.served_name={MODEL}",  # the scripted server's
        ]
        objects = {m.obj["metadata"]["name"]: m.obj for m in build(load_profile(K3, sets))}
        (container,) = objects[f"{K3}-canary"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        args = list(container["args"])
        profile_file, dataset_file = tmp_path / "profile.yaml", tmp_path / "prompts.jsonl"
        profile_file.write_text(objects[f"{K3}-profile"]["data"]["profile.yaml"], encoding="utf-8")
        dataset_file.write_text(objects[f"{K3}-canary-dataset"]["data"]["prompts.jsonl"], encoding="utf-8")
        cut = args.index("--report-configmap")
        args = args[:cut] + args[cut + 2 :]
        with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
            args[args.index("--endpoint") + 1] = srv.url
            args[args.index("-p") + 1] = str(profile_file)
            args[args.index("--dataset") + 1] = f"jsonl:{dataset_file}"
            result = run_cli(*args)
            sent = [b for b in srv.bodies if b.get("max_tokens") == 32]
        assert result.returncode == 0, result.stderr
        # A warm-up, then the two measured requests of the one category.
        assert len(sent) == 3 and all((b["temperature"], b["top_p"]) == (1.0, 0.95) for b in sent)
        decode = _only(gateway, series.DECODE)
        assert (decode["release"], decode["group"], decode["draft_revision"]) == (K3, "0", "main")
        assert [s["category"] for s in pushed(gateway)[series.ACCEPTANCE]] == ["low_entropy"]
        assert float(_only(gateway, series.REQUESTS)["__value__"]) == 2  # observe.canary.requests, bounded
