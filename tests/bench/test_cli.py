"""`k3deploy bench` and `bench compare` as a user runs them (subprocess), against the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from k3deploy.report.bench import BenchReport
from tests.conftest import run_cli
from tests.smoke.scripted_server import Script, scripted_server

ARGS = (
    "-p",
    "local-cpu",
    "--dataset",
    "builtin",
    "--subset",
    "throughput",
    "--num-prompts",
    "1",
    "--output-tokens",
    "16",
)


def assert_clean_error(result, code: int, *needles: str) -> None:  # CompletedProcess
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert any(line.startswith("error: ") for line in lines) and lines[-1].startswith("hint: ")
    for needle in needles:
        assert needle in result.stderr


def test_json_report_table_and_file(tmp_path: Path) -> None:
    with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
        result = run_cli(
            "bench",
            "--endpoint",
            srv.url,
            *ARGS,
            "--concurrency",
            "1,2",
            "--label",
            "base",
            "-o",
            "json",
            "--report",
            str(tmp_path / "r.json"),
        )
    assert result.returncode == 0, result.stderr
    report = BenchReport.model_validate_json(result.stdout)
    assert report.label == "base" and report.settings.concurrency == [1, 2]
    assert BenchReport.load(tmp_path / "r.json") == report
    assert "DECODE TOK/S" in result.stderr and "low_entropy" in result.stderr and "overall" in result.stderr
    assert "warm-up" not in result.stderr  # progress stays quiet under -o json


def test_progress_notes_in_table_mode() -> None:
    with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
        result = run_cli("bench", "--endpoint", srv.url, *ARGS)
    assert result.returncode == 0, result.stderr
    assert "warm-up: ok" in result.stderr and "low_entropy @ concurrency 1: median decode" in result.stderr
    assert result.stdout == ""


def test_failures_exit_1_and_unreachable_exits_3(tmp_path: Path) -> None:
    with scripted_server(Script(completion_status=500)) as srv:
        result = run_cli("bench", "--endpoint", srv.url, *ARGS)
    assert_clean_error(result, 1, "request(s) failed")
    assert_clean_error(run_cli("bench", "--endpoint", "http://127.0.0.1:9", *ARGS), 3, "connection refused")
    assert_clean_error(run_cli("bench", *ARGS), 2, "--endpoint")
    assert_clean_error(
        run_cli("bench", "--endpoint", "http://x", *ARGS, "--report", str(tmp_path / "no" / "r.json")),
        2,
        "does not exist",
    )
    assert_clean_error(
        run_cli("bench", "--endpoint", "http://x", "--dataset", "speed-bench:/nonexistent"), 2, "not a directory"
    )


def _run(url: str, tmp: Path, name: str, *extra: str) -> Path:
    path = tmp / f"{name}.json"
    result = run_cli("bench", "--endpoint", url, *ARGS, "--label", name, "--report", str(path), *extra)
    assert result.returncode == 0, result.stderr
    return path


def test_compare_shows_speedups_and_refuses_unlike_runs(tmp_path: Path) -> None:
    with scripted_server(Script(chunk_delay_s=0.02)) as slow:
        a = _run(slow.url, tmp_path, "a")
    with scripted_server(Script(chunk_delay_s=0.001)) as fast:
        b = _run(fast.url, tmp_path, "b")
        longer = _run(fast.url, tmp_path, "longer", "--output-tokens", "24")
        hot = _run(fast.url, tmp_path, "hot", "--temperature", "0.5")
        other = _run(fast.url, tmp_path, "other", "--num-prompts", "2")
    result = run_cli("bench", "compare", str(a), str(b), "-o", "json")
    assert result.returncode == 0, result.stderr
    comparison = json.loads(result.stdout)
    overall = next(r for r in comparison["rows"] if r["category"] == "overall")
    # Faster by design (a twentieth of the chunk gap): only the direction is asserted, a loaded host shrinks margins.
    assert overall["speedup"][0] == 1.0 and overall["speedup"][1] > 1.0
    assert [r["category"] for r in comparison["rows"]] == ["low_entropy", "mixed", "high_entropy", "overall"]
    assert "SPEEDUP" in result.stderr
    assert_clean_error(run_cli("bench", "compare", str(a), str(longer)), 2, "output length differs", "16", "24")
    assert_clean_error(run_cli("bench", "compare", str(a), str(hot)), 2, "temperature differs")
    assert_clean_error(run_cli("bench", "compare", str(a), str(other)), 2, "prompt set differs")
    assert_clean_error(run_cli("bench", "compare", str(a)), 2, "at least two")
    (tmp_path / "x.json").write_text("{}")
    assert_clean_error(run_cli("bench", "compare", str(a), str(tmp_path / "x.json")), 2, "not a bench report")


def test_compare_names_the_published_references(tmp_path: Path) -> None:
    with scripted_server(Script(chunk_delay_s=0.0)) as srv:
        a = _run(
            srv.url,
            tmp_path,
            "a",
            "--set",
            "targets.baseline_decode_tok_s=118",
            "--set",
            "targets.decode_tok_s=370",
            "--set",
            "targets.peak_decode_tok_s=464",
        )
        b = _run(srv.url, tmp_path, "b")
    result = run_cli("bench", "compare", str(a), str(b), "-o", "json")
    refs = json.loads(result.stdout)["references"]
    assert refs == {
        "baseline_decode_tok_s": 118.0,
        "decode_tok_s": 370.0,
        "peak_decode_tok_s": 464.0,
        "speedup": 370 / 118,
    }
    assert (
        "118 tok/s without speculation" in result.stderr
        and "3.14x" in result.stderr
        and "464 tok/s peak" in result.stderr
    )
    # local-cpu's own decode_tok_s (5) is a floor it enforces, not a published figure.
    result = run_cli("bench", "compare", str(b), str(a), "-o", "json")
    assert json.loads(result.stdout)["references"]["decode_tok_s"] is None
    assert "the profile names no reference figures" in result.stderr


def test_kimi_profile_references_are_the_published_figures() -> None:
    from k3deploy.bench.runner import published_references
    from k3deploy.profile import load_profile

    assert published_references(load_profile("kimi-k3-gb300-tp16")) == {
        "baseline_decode_tok_s": 118.0,
        "decode_tok_s": 370.0,
        "peak_decode_tok_s": 464.0,
    }


def test_open_loop_repeat_goodput_and_csv(tmp_path: Path) -> None:
    import csv

    with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
        result = run_cli(
            "bench",
            "--endpoint",
            srv.url,
            *ARGS,
            "--category",
            "mixed",
            "--request-rate",
            "40,80",
            "--max-concurrency",
            "2",
            "--burstiness",
            "0.5",
            "--repeat",
            "2",
            "--goodput",
            "ttft:500",
            "tpot:20",
            "--percentiles",
            "99.9",
            "--csv",
            str(tmp_path / "r.csv"),
            "-o",
            "json",
        )
    assert result.returncode == 0, result.stderr
    report = BenchReport.model_validate_json(result.stdout)
    load = report.settings.load
    assert (load.kind, load.request_rates, load.burstiness, load.max_concurrency) == ("open", [40.0, 80.0], 0.5, 2)
    assert report.settings.goodput_slo_ms == {"ttft": 500.0, "tpot": 20.0} and report.settings.repeat == 2
    assert 99.9 in report.settings.percentiles
    cell = report.cell("mixed", 2, 80.0)
    assert cell is not None and len(cell.repeats) == 2 and cell.spread is not None
    assert cell.ttft_ms.at(99.9) is not None and cell.throughput.good is not None
    assert "rate 80 req/s (max concurrency 2)" in result.stderr and "GOODPUT" in result.stderr
    with (tmp_path / "r.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(report.requests) == 2 * 2  # 1 prompt x 2 repeats x 2 rates
    assert {r["request_rate"] for r in rows} == {"40.0", "80.0"} and {r["repeat"] for r in rows} == {"0", "1"}
    first = report.requests[0]
    assert float(rows[0]["tpot_ms"]) == first.tpot_ms and float(rows[0]["e2el_ms"]) == first.e2el_ms
    assert rows[0]["good"] == str(first.good)


def test_compare_rounds_with_html_and_png(tmp_path: Path) -> None:
    files = []
    with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
        for n, label in enumerate(("A", "B", "A", "B")):
            files.append(tmp_path / f"{n}-{label}.json")
            done = run_cli("bench", "--endpoint", srv.url, *ARGS, "--label", label, "--report", str(files[-1]))
            assert done.returncode == 0, done.stderr
    html, png = tmp_path / "c.html", tmp_path / "c.png"
    done = run_cli("bench", "compare", *map(str, files), "--html", str(html), "--png", str(png), "-o", "json")
    assert done.returncode == 0, done.stderr
    comparison = json.loads(done.stdout)
    assert comparison["labels"] == ["A", "B"] and comparison["rounds"] == 2
    overall = next(r for r in comparison["rows"] if r["category"] == "overall")
    assert (
        overall["samples"] == [2, 2]
        and overall["speedup_low"][1] <= overall["speedup"][1] <= overall["speedup_high"][1]
    )
    assert "Speedup over A" in html.read_text() and png.read_bytes()[:4] == b"\x89PNG"
    # Same-machine runs of the same server: whatever the verdict, it is stated, never a bare ratio.
    if comparison["verdict"]:
        assert comparison["verdict"] in done.stderr


@pytest.mark.parametrize("value", ["a/b", "../x"])
def test_a_sweep_value_that_cannot_name_a_report_is_refused_before_any_server_starts(
    value: str, tmp_path: Path
) -> None:
    result = run_cli(
        "bench",
        "-p",
        "local-cpu",
        "--sweep",
        f"speculative.num_speculative_tokens=1,{value}",
        "--report",
        str(tmp_path / "r.json"),
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines()[0] == (
        f"error: --sweep speculative.num_speculative_tokens: value {value!r} cannot name a report file "
        "('/', NUL or invalid Unicode)"
    )
    assert "==> bench variant" not in result.stderr and list(tmp_path.iterdir()) == []


def test_an_ab_run_reads_its_dataset_before_serving(tmp_path: Path) -> None:
    bad = tmp_path / "d.jsonl"
    bad.write_text('{"prompt": "x \\ud800"}\n')
    result = run_cli("bench", "-p", "local-cpu", "--ab", "--dataset", f"jsonl:{bad}")
    assert result.returncode == 2, result.stderr
    assert "lone surrogate" in result.stderr.splitlines()[0] and "==> bench variant" not in result.stderr


def test_credentials_in_the_endpoint_are_printed_and_stored_nowhere(tmp_path: Path) -> None:
    """bench authenticates with `--endpoint http://user:token@host` as given; output, report and chart show `***@`."""
    with scripted_server(Script(chunk_delay_s=0.0005)) as srv:
        secret = srv.url.replace("http://", "http://alice:s3cret-pw@")
        report, html = tmp_path / "r.json", tmp_path / "r.html"
        done = run_cli("bench", "--endpoint", secret, *ARGS, "--report", str(report), "--html", str(html))
    with scripted_server(Script(completion_status=500)) as srv:
        failed = run_cli("bench", "--endpoint", srv.url.replace("http://", "http://alice:s3cret-pw@"), *ARGS)
    assert done.returncode == 0, done.stderr
    assert failed.returncode == 1, failed.stderr
    for shown in (done.stdout + done.stderr, failed.stdout + failed.stderr, report.read_text(), html.read_text()):
        assert "s3cret-pw" not in shown and "alice" not in shown
    assert "http://***@127.0.0.1:" in report.read_text()
