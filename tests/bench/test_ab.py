"""--ab / --sweep planning and refusals (the real serving is in tests/integration/test_bench_ab.py)."""

from __future__ import annotations

import pytest

from k3deploy.bench.ab import parse_sweep, variants
from k3deploy.bench.compare import best_per_concurrency, headline
from k3deploy.errors import UsageError
from k3deploy.profile import Profile
from k3deploy.report.bench import BenchReport
from tests.bench.test_cli import assert_clean_error
from tests.conftest import run_cli


def test_variants_baseline_first_then_speculation_or_sweep_values() -> None:
    assert variants(True, None) == [("baseline", ["speculative=null"]), ("speculative", [])]
    assert variants(False, "speculative.num_speculative_tokens=1,3") == [
        ("num_speculative_tokens=1", ["speculative.num_speculative_tokens=1"]),
        ("num_speculative_tokens=3", ["speculative.num_speculative_tokens=3"]),
    ]
    assert variants(True, "speculative.num_speculative_tokens=2")[0][0] == "baseline"
    for bad in ("speculative.num_speculative_tokens", "=1,2", "k=", "k=,"):
        with pytest.raises(UsageError, match="not KEY=V1,V2"):
            parse_sweep(bad)


def test_ab_refuses_kubernetes_profiles_and_an_endpoint() -> None:
    assert_clean_error(
        run_cli("bench", "--ab", "-p", "kimi-k3-gb300-tp16"), 2, "only on a local profile", "docs/guide/bench.md"
    )
    assert_clean_error(run_cli("bench", "--ab", "--endpoint", "http://x:1"), 2, "drop --endpoint")
    assert_clean_error(
        run_cli("bench", "--ab", "-p", "local-cpu", "--set", "speculative=null"), 2, "no speculative section"
    )
    assert_clean_error(
        run_cli("bench", "--sweep", "speculative.num_speculative_tokens=1,99", "-p", "local-cpu"),
        2,
        "num_speculative_tokens",
    )


def _report(label: str, rates: dict[int, float]) -> BenchReport:
    from k3deploy.report.bench import BenchSettings, CellFigures
    from k3deploy.report.smoke import Stats

    settings = BenchSettings(
        dataset="builtin/throughput",
        categories=["a"],
        prompt_set_sha256="x",
        prompts_per_category=1,
        output_tokens=8,
        temperature=0.0,
        api="completions",
        concurrency=sorted(rates),
    )
    overall = [
        CellFigures(
            category="overall",
            concurrency=c,
            requests=1,
            failed=0,
            completion_tokens=8,
            decode_tok_s=Stats(count=1, p10=r, median=r, p90=r, mean=r),
            e2e_tok_s=Stats(count=0),
            tokens_per_chunk=Stats(count=0),
        )
        for c, r in rates.items()
    ]
    return BenchReport(
        label=label,
        profile="p",
        endpoint="http://x",
        model="m",
        settings=settings,
        started_at="2026-01-01T00:00:00Z",
        overall=overall,
    )


def test_best_draft_length_per_concurrency_and_headline() -> None:
    runs = [
        _report("k=1", {1: 100.0, 8: 400.0}),
        _report("k=3", {1: 250.0, 8: 380.0}),
        _report("k=5", {1: 240.0, 8: 300.0}),
    ]
    assert best_per_concurrency(runs) == {1: ("k=3", 250.0), 8: ("k=1", 400.0)}
    lines = headline(runs)
    assert "speedup k=3 over k=1 at concurrency 1: 2.50x" in lines[0]
    assert lines[-2:] == ["best at concurrency 1: k=3 (250.0 tok/s)", "best at concurrency 8: k=1 (400.0 tok/s)"]


def _round(label: str, rate: float, load: float | None = None) -> BenchReport:
    from k3deploy.report.bench import HostLoad

    report = _report(label, {1: rate})
    if load is not None:
        report.host = HostLoad(cpus=2, load_start=load, load_end=load)
    return report


def test_interleaved_rounds_give_a_speedup_with_its_spread() -> None:
    from k3deploy.bench.compare import compare

    steady = [_round("A", 100.0), _round("B", 150.0), _round("A", 110.0), _round("B", 160.0)]
    c = compare(steady, [f"f{i}" for i in range(4)])
    (row,) = c.rows
    assert c.labels == ["A", "B"] and c.rounds == 2 and row.samples == [2, 2]
    assert row.speedup[1] == pytest.approx((1.5 + 160 / 110) / 2)
    assert (row.speedup_low[1], row.speedup_high[1]) == (pytest.approx(160 / 110), pytest.approx(1.5))
    assert c.verdict is None
    assert "1.48x (105.0 -> 155.0 median decode tok/s, 1.45x..1.50x over 2 rounds)" in headline(steady)[0]
    noisy = [_round("A", 100.0), _round("B", 6.0), _round("A", 100.0), _round("B", 112.0)]
    verdict = compare(noisy, ["a", "b", "c", "d"]).verdict
    assert verdict is not None and "not meaningful" in verdict and "0.06x..1.12x" in verdict
    assert headline(noisy)[-1] == verdict  # said in one line, after the figures
    loaded = compare([_round("A", 100.0, load=1.0), _round("B", 150.0, load=5.5)], ["a", "b"])
    assert loaded.verdict is not None and "load was 5.5..5.5 on 2 CPU(s)" in loaded.verdict


def test_one_round_pairs_the_cells_repeats() -> None:
    from k3deploy.bench.compare import compare
    from k3deploy.report.bench import RepeatFigures

    a, b = _round("A", 100.0), _round("B", 200.0)
    a.overall[0].repeats = [RepeatFigures(decode_tok_s=v) for v in (100.0, 90.0, 110.0)]
    b.overall[0].repeats = [RepeatFigures(decode_tok_s=v) for v in (200.0, 190.0, 230.0)]
    (row,) = compare([a, b], ["a", "b"]).rows
    assert row.samples[1] == 3 and row.speedup_low[1] == pytest.approx(2.0)
    assert row.speedup_high[1] == pytest.approx(190 / 90)


def test_ab_repeat_interleaves_the_variants(monkeypatch: pytest.MonkeyPatch) -> None:
    """--ab --repeat 2 serves A B A B (never A A B B); the serving and measuring are replaced here, only the order is
    under test (tests/integration/test_bench_ab.py serves for real)."""
    from k3deploy.bench import ab
    from k3deploy.bench.cli_run import Request
    from k3deploy.bench.runner import Measured

    order: list[str] = []

    class Local:
        """bench/ab.py's `Serving` for a local target, recording the order instead of starting vLLM."""

        serves_variants = True

        def current(self, _profile: object) -> None:
            return None

        def serve(self, profile: Profile, _reporter: object) -> str:
            order.append("baseline" if profile.speculative is None else "speculative")
            return "http://127.0.0.1:9"

        def restore(self, _profile: object, previous: object, _reporter: object) -> str:
            order.append(f"restore {previous}")
            return "nothing was live"

    monkeypatch.setattr(ab, "measure", lambda *_a, **_k: Measured(endpoint="http://127.0.0.1:9"))
    request = Request(endpoint=None, profile="local-cpu", ab=True, repeat=2, quiet=True)
    reports = ab.run_variants(request, lambda _base: Local())
    assert order == ["baseline", "speculative", "baseline", "speculative", "restore None"]
    assert [r.label for r in reports] == ["baseline", "speculative"]
    assert all(r.settings.repeat == 2 for r in reports)


@pytest.mark.parametrize("quiet", [True, False])
def test_a_failed_restore_is_one_warning_and_the_variants_notes_follow_quiet(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], quiet: bool
) -> None:
    """The A/B run reports through one Reporter: its progress notes only when not quiet, a restore that fails as one
    `warning:` line either way (the reports are still returned)."""
    from k3deploy.bench import ab
    from k3deploy.bench.cli_run import Request
    from k3deploy.bench.runner import Measured
    from k3deploy.errors import K3DeployError

    class Failing:
        """A `Serving` whose restore fails, as a target that cannot put the old server back."""

        serves_variants = True

        def current(self, _profile: object) -> None:
            return None

        def serve(self, _profile: object, reporter: ab.Reporter) -> str:
            reporter.note("served")
            return "http://127.0.0.1:9"

        def restore(self, _profile: object, _previous: object, _reporter: object) -> str:
            raise K3DeployError("port 8000 is held")

    monkeypatch.setattr(ab, "measure", lambda *_a, **_k: Measured(endpoint="http://127.0.0.1:9"))
    reports = ab.run_variants(Request(endpoint=None, profile="local-cpu", ab=True, quiet=quiet), lambda _b: Failing())
    assert len(reports) == 2
    notes = ["==> bench variant baseline", "served", "==> bench variant speculative", "served"]
    warning = "warning: could not restore the previous state: port 8000 is held"
    # Not quiet, each measurement's transient progress bar leaves an empty line where it stood.
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert lines == ([warning] if quiet else [*notes, warning])
