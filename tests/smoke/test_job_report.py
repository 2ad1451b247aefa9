"""The smoke Job's log ends with `k3deploy smoke -o json`'s report: found after the stderr lines, the last one wins,
anything that is not a smoke report is passed over."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.errors import SmokeUnreachable
from k3deploy.profile import load_profile
from k3deploy.smoke.job_report import JobRun, report_from_log, verdict
from k3deploy.smoke.runner import run_smoke
from tests.conftest import run_cli
from tests.smoke.scripted_server import Script, scripted_server

QUICK = ["smoke.requests=1", "smoke.output_tokens=8", "targets.decode_tok_s=1"]


def test_the_report_the_smoke_command_prints_is_found_after_its_stderr_lines(tmp_path: Path) -> None:
    with scripted_server(Script()) as server:
        done = run_cli(
            "smoke",
            "-p",
            "local-cpu",
            "--endpoint",
            server.url,
            *(a for s in QUICK for a in ("--set", s)),
            "-o",
            "json",
        )
    assert done.returncode == 0, done.stderr
    log = done.stderr + done.stdout + "\n"  # a container log holds both streams, the report written last
    report = report_from_log(log)
    assert report is not None and report.endpoint == server.url
    assert report.checks[0].name == "liveness" and report.status.value in ("pass", "warn")


def test_the_last_report_wins_and_other_json_is_passed_over() -> None:
    profile = load_profile("local-cpu", QUICK)
    with scripted_server(Script()) as server:
        first = run_smoke(profile, server.url).model_dump_json(indent=2)
    strict = load_profile("local-cpu", [*QUICK[:2], "targets.decode_tok_s=1e9"])
    with scripted_server(Script()) as server:
        second = run_smoke(strict, server.url).model_dump_json(indent=2)
    log = "\n".join([first, '{"kind": "something else"}', "{ not json", second, "note: trailing line"])
    report = report_from_log(log)
    assert report is not None
    assert report.check("decode target") is not None and report.check("decode target").status.value == "fail"


def test_a_log_without_a_report_has_none() -> None:
    assert report_from_log("") is None
    assert report_from_log('waiting for /health\n{"kind": "k3deploy.smoke"}\n') is None  # kind alone: invalid


def _run(log: str, *, failed: bool) -> JobRun:
    outcome = "failed (BackoffLimitExceeded: Job has reached the specified backoff limit)" if failed else "completed"
    return JobRun("ns/Job/k3-smoke", "job/ns/k3-smoke", log, outcome, failed, "look at the Job")


def test_the_pipeline_judges_a_finished_job_by_the_report_its_log_ends_with() -> None:
    passing = load_profile("local-cpu", QUICK)
    failing = load_profile("local-cpu", [*QUICK[:2], "targets.decode_tok_s=1e9"])
    with scripted_server(Script()) as server:
        passed = run_smoke(passing, server.url)
        failed = run_smoke(failing, server.url)
    assert not any(c.status.value == "fail" for c in passed.checks)
    assert any(c.status.value == "fail" for c in failed.checks)

    report, reach = verdict(_run("waiting\n" + passed.model_dump_json(indent=2) + "\n", failed=False))
    assert report.status == passed.status and (reach.kind, reach.target) == ("in-cluster", "job/ns/k3-smoke")
    assert reach.url == server.url and reach.retry_hint == "look at the Job"
    # A failed Job whose report failed a check: the report decides (a rollback), not the Job's ending.
    report, _ = verdict(_run(failed.model_dump_json(indent=2) + "\n", failed=True))
    assert report.status.value == "fail"
    # A failed Job whose report passed, or no report at all: no verdict, the install is kept (exit 3).
    with pytest.raises(SmokeUnreachable, match=r"failed .* although its report passed") as caught:
        verdict(_run(passed.model_dump_json(indent=2) + "\n", failed=True))
    assert caught.value.hint == "look at the Job" and caught.value.exit_code == 3
    with pytest.raises(SmokeUnreachable, match="ns/Job/k3-smoke completed without a smoke report in its log"):
        verdict(_run("Traceback: no report\n", failed=False))
