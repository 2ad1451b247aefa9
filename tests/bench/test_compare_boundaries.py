"""`bench compare`'s rules pinned (the survivors of tests/mutation/run on k3deploy/bench/compare.py): every run is
checked for like-for-like against the first, speedups divide by the first run, references imply their speedup."""

from __future__ import annotations

import pytest

from k3deploy.bench.compare import best_per_concurrency, compare, differences, headline, references
from k3deploy.report.bench import BenchReport
from tests.bench.test_ab import _report


def _with(report: BenchReport, **settings: object) -> BenchReport:
    return report.model_copy(update={"settings": report.settings.model_copy(update=settings)})


@pytest.mark.parametrize(
    ("setting", "value", "line"),
    [
        ("dataset", "builtin/other", "dataset differs: a has builtin/throughput, c has builtin/other"),
        ("prompt_set_sha256", "y" * 64, "prompt set differs: a has x, c has yyyyyyyyyyyy"),
        ("output_tokens", 16, "output length differs: a has 8, c has 16"),
        ("temperature", 0.5, "temperature differs: a has 0.0, c has 0.5"),
    ],
)
def test_a_third_run_is_checked_like_for_like_too(setting: str, value: object, line: str) -> None:
    runs = [_report("a", {1: 100.0}), _report("b", {1: 120.0}), _with(_report("c", {1: 130.0}), **{setting: value})]
    assert differences(runs, ["a", "b", "c"]) == [line]
    assert differences(runs[:2], ["a", "b"]) == []


def test_every_differing_setting_of_every_run_is_named() -> None:
    runs = [_report("a", {1: 1.0}), _with(_report("b", {1: 1.0}), output_tokens=9, temperature=1.0)]
    assert len(differences(runs, ["a", "b"])) == 2


def test_speedup_is_each_runs_median_over_the_first_runs() -> None:
    runs = [_report("a", {1: 100.0, 8: 0.0}), _report("b", {1: 250.0, 8: 50.0}), _report("c", {1: 50.0})]
    rows = {row.concurrency: row for row in compare(runs, ["a.json", "b.json", "c.json"]).rows}
    assert rows[1].decode_tok_s == [100.0, 250.0, 50.0]
    assert rows[1].speedup == [1.0, 2.5, 0.5]
    # No base rate (0) or no cell in a run: no speedup rather than a division by zero or a made-up one.
    assert rows[8].speedup == [None, None, None]
    assert rows[8].decode_tok_s == [0.0, 50.0, None]
    assert [row.category for row in rows.values()] == ["overall", "overall"]


@pytest.mark.parametrize(
    ("refs", "speedup"),
    [
        ({"baseline_decode_tok_s": 100.0, "decode_tok_s": 250.0}, 2.5),
        ({"baseline_decode_tok_s": 0.0, "decode_tok_s": 250.0}, None),
        ({"decode_tok_s": 250.0}, None),
        ({"baseline_decode_tok_s": 100.0}, None),
    ],
)
def test_the_published_speedup_is_spec_over_baseline_when_both_are_known(refs: dict, speedup: float | None) -> None:
    report = _report("a", {1: 1.0}).model_copy(update={"references": {**refs, "peak_decode_tok_s": 464.0}})
    found = references(report)
    assert found.speedup == speedup and found.peak_decode_tok_s == 464.0


def test_the_best_run_per_level_needs_a_strictly_higher_rate() -> None:
    runs = [_report("a", {1: 100.0}), _report("b", {1: 100.0}), _report("c", {1: 99.0})]
    assert best_per_concurrency(runs) == {1: ("a", 100.0)}  # a tie keeps the first run
    assert list(best_per_concurrency([_report("x", {8: 1.0, 1: 2.0})])) == [1, 8]


def test_headline_lists_every_later_run_and_the_best_only_for_a_sweep() -> None:
    two = headline([_report("off", {1: 100.0}), _report("on", {1: 300.0})])
    assert two == ["speedup on over off at concurrency 1: 3.00x (100.0 -> 300.0 median decode tok/s)"]
    three = headline([_report("k=1", {1: 100.0}), _report("k=2", {1: 200.0}), _report("k=3", {1: 0.0})])
    assert three[0].startswith("speedup k=2 over k=1 at concurrency 1: 2.00x")
    assert three[1:] == ["best at concurrency 1: k=2 (200.0 tok/s)"]  # k=3 measured nothing: no speedup line
