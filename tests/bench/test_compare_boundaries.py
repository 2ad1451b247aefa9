"""`bench compare`'s rules pinned (the survivors of tests/mutation/run on k3deploy/bench/compare.py): every run is
checked for like-for-like against the first, speedups divide by the first run, references imply their speedup."""

from __future__ import annotations

import pytest

from k3deploy.bench.compare import best_per_concurrency, compare, differences, headline, references
from k3deploy.report.bench import BenchReport, RepeatFigures
from tests.bench.test_ab import _report, _round


def _with(report: BenchReport, **settings: object) -> BenchReport:
    return report.model_copy(update={"settings": report.settings.model_copy(update=settings)})


@pytest.mark.parametrize(
    ("setting", "value", "line"),
    [
        ("dataset", "builtin/other", "dataset differs: a has builtin/throughput, c has builtin/other"),
        ("prompt_set_sha256", "y" * 64, "prompt set differs: a has x, c has yyyyyyyyyyyy"),
        ("output_tokens", 16, "output length differs: a has 8, c has 16"),
        ("temperature", 0.5, "temperature differs: a has 0.0, c has 0.5"),
        ("top_p", 0.95, "top_p differs: a has None, c has 0.95"),
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
    assert two == [
        "speedup on over off at concurrency 1: 3.00x (100.0 -> 300.0 median decode tok/s, "
        "one round: spread unknown (--repeat N))"
    ]
    # Same labels are rounds of one variant (A B A B): two rounds give the ratios' min..max, and still one line.
    rounds = headline([_report("off", {1: 100.0}), _report("on", {1: 300.0})] * 2)
    assert rounds == [
        "speedup on over off at concurrency 1: 3.00x (100.0 -> 300.0 median decode tok/s, 3.00x..3.00x over 2 rounds)"
    ]
    three = headline([_report("k=1", {1: 100.0}), _report("k=2", {1: 200.0}), _report("k=3", {1: 0.0})])
    assert three[0].startswith("speedup k=2 over k=1 at concurrency 1: 2.00x")
    assert three[1:] == ["best at concurrency 1: k=2 (200.0 tok/s)"]  # k=3 measured nothing: no speedup line


def _cells(report: BenchReport, *categories: str) -> BenchReport:
    overall = report.overall[0]
    return report.model_copy(update={"cells": [overall.model_copy(update={"category": c}) for c in categories]})


def test_prompt_sets_are_named_by_the_first_12_characters_of_both_digests() -> None:
    a = _with(_report("a", {1: 1.0}), prompt_set_sha256="0123456789abcdef" * 4)
    b = _with(_report("b", {1: 1.0}), prompt_set_sha256="fedcba9876543210" * 4)
    assert differences([a, b], ["a", "b"]) == ["prompt set differs: a has 0123456789ab, b has fedcba987654"]


def test_rows_follow_the_first_runs_cells_and_references() -> None:
    first = _cells(_report("a", {1: 100.0}), "low", "high").model_copy(
        update={"references": {"baseline_decode_tok_s": 100.0, "decode_tok_s": 300.0}}
    )
    second = _cells(_report("b", {1: 200.0}), "low").model_copy(
        update={"references": {"baseline_decode_tok_s": 100.0, "decode_tok_s": 150.0}}
    )
    third = _cells(_report("c", {2: 50.0}), "other")
    result = compare([first, second, third], ["a", "b", "c"])
    assert [(r.category, r.concurrency) for r in result.rows] == [("low", 1), ("high", 1), ("overall", 1)]
    assert result.rows[1].decode_tok_s == [100.0, None, None]  # a cell the later runs lack
    assert result.references.speedup == 3.0
    assert result.labels == ["a", "b", "c"] and result.files == ["a", "b", "c"]


def test_a_rows_acceptance_length_comes_from_the_cells_server_counters() -> None:
    from k3deploy.measure.metrics import spec_decode_figures
    from k3deploy.report.bench import ServerDelta

    spec = spec_decode_figures(10.0, 40.0, 15.0, {})

    def run(label: str, server: ServerDelta | None) -> BenchReport:
        report = _report(label, {1: 100.0})
        return report.model_copy(update={"overall": [report.overall[0].model_copy(update={"server": server})]})

    with_spec, without, bare = (
        run("x", ServerDelta(available=True, spec_decode=spec)),
        run("y", ServerDelta(available=True)),
        run("z", None),
    )
    [row] = compare([with_spec, without, bare], ["x", "y", "z"]).rows
    assert row.mean_acceptance_length == [2.5, None, None]  # 15 accepted over 10 drafts, +1; none without counters
    # Same label: rounds of one variant, one figure per variant, its first round's.
    [rounds] = compare([with_spec, run("x", ServerDelta(available=True))], ["x1", "x2"]).rows
    [later_first] = compare([run("x", ServerDelta(available=True)), with_spec], ["x1", "x2"]).rows
    assert (rounds.mean_acceptance_length, later_first.mean_acceptance_length) == ([2.5], [None])


def test_overall_rows_are_the_first_runs_concurrency_levels() -> None:
    rows = compare([_report("a", {1: 100.0}), _report("b", {1: 150.0, 8: 400.0})], ["a", "b"]).rows
    assert [(r.category, r.concurrency) for r in rows] == [("overall", 1)]


def _rounds(rates: dict[str, list[float]], loads: dict[str, float] | None = None) -> list[BenchReport]:
    """The rounds of every variant interleaved (A B A B ...), one overall cell at concurrency 1 each."""
    count = max(len(r) for r in rates.values())
    return [
        _round(label, values[k], (loads or {}).get(label))
        for k in range(count)
        for label, values in rates.items()
        if k < len(values)
    ]


def test_a_spread_of_exactly_a_quarter_of_the_median_is_still_meaningful() -> None:
    # 1.75x and 2.25x: median 2.00x, (2.25 - 1.75) / 2.00 = 0.25, not over the limit (all exact in binary).
    rounds = _rounds({"A": [100.0, 100.0], "B": [175.0, 225.0]})
    result = compare(rounds, [str(i) for i in range(4)])
    assert result.rows[0].speedup[1] == 2.0 and result.verdict is None
    assert headline(rounds)[-1].endswith("1.75x..2.25x over 2 rounds)")


def test_a_spread_just_over_a_quarter_of_the_median_is_not_meaningful() -> None:
    rounds = _rounds({"A": [100.0, 100.0], "B": [174.0, 226.0]})
    line = "speedup of B over A is not meaningful: its 2 rounds gave 1.74x..2.26x (spread 26 % > 25 %)"
    assert compare(rounds, [str(i) for i in range(4)]).verdict == line
    assert headline(rounds)[-1] == line


def test_the_spread_line_names_the_noisy_variant_its_base_and_the_spread_in_percent_of_the_median() -> None:
    # C's rounds: 1.00x and 3.00x, median 2.00x: spread 2.00 / 2.00 = 100 %; B is steady and not named.
    rounds = _rounds({"A": [100.0, 100.0], "B": [150.0, 150.0], "C": [100.0, 300.0]})
    assert compare(rounds, [str(i) for i in range(6)]).verdict == (
        "speedup of C over A is not meaningful: its 2 rounds gave 1.00x..3.00x (spread 100 % > 25 %)"
    )


def test_the_spread_rule_and_the_headline_read_the_overall_rows_past_the_category_rows() -> None:
    # compare's rows are the first run's category cells, then its overall ones: the category rows come first.
    rounds = [_cells(r, "low") for r in _rounds({"A": [100.0, 100.0], "B": [100.0, 300.0]})]
    result = compare(rounds, [str(i) for i in range(4)])
    assert [row.category for row in result.rows] == ["low", "overall"]
    line = "speedup of B over A is not meaningful: its 2 rounds gave 1.00x..3.00x (spread 100 % > 25 %)"
    assert result.verdict == line
    assert headline(rounds) == [
        "speedup B over A at concurrency 1: 2.00x (100.0 -> 200.0 median decode tok/s, 1.00x..3.00x over 2 rounds)",
        line,
    ]


def test_a_loaded_host_is_named_by_the_first_run_whose_load_is_over_its_cpu_count() -> None:
    # 2.0 on 2 CPUs is not over the count; B (3.0) and C (5.5) are, and B, the first of them, is named.
    runs = _rounds({"A": [100.0], "B": [150.0], "C": [160.0]}, loads={"A": 2.0, "B": 3.0, "C": 5.5})
    assert compare(runs, ["a", "b", "c"]).verdict == (
        "speedup is not meaningful: the client host's load was 3.0..3.0 on 2 CPU(s) during B "
        "(over its CPU count, timings measure the host)"
    )
    assert compare(runs[:1], ["a"]).verdict is None


def _repeats(report: BenchReport, *rates: float) -> BenchReport:
    report.overall[0].repeats = [RepeatFigures(decode_tok_s=v) for v in rates]
    return report


@pytest.mark.parametrize(
    ("base", "other"),
    [
        ((100.0, 100.0), (200.0, 0.0)),  # the other variant measured nothing in its second repeat
        ((100.0, 0.0), (200.0, 300.0)),  # the base measured nothing in its second repeat: no division by zero
    ],
)
def test_one_round_pairs_only_the_repeats_both_variants_measured(base: tuple, other: tuple) -> None:
    (row,) = compare([_repeats(_round("A", 100.0), *base), _repeats(_round("B", 200.0), *other)], ["a", "b"]).rows
    assert (row.samples[1], row.speedup[1], row.speedup_low[1], row.speedup_high[1]) == (1, 2.0, 2.0, 2.0)


@pytest.mark.parametrize(
    ("rates", "samples"),
    [
        ({"A": [100.0, 110.0], "B": [150.0]}, [2, 1]),  # A B A: B's second round was never run
        ({"A": [100.0], "B": [150.0, 160.0]}, [1, 1]),  # A B B: A's second round was never run
    ],
)
def test_rounds_of_unequal_counts_pair_up_to_the_shorter(rates: dict, samples: list) -> None:
    result = compare(_rounds(rates), ["a", "b", "c"])
    assert result.rounds == 1 and result.rows[0].samples == samples
    assert result.rows[0].speedup[1] == 1.5 and result.verdict is None


def test_rows_and_references_follow_the_first_round_of_the_first_variant() -> None:
    first = _report("A", {1: 100.0}).model_copy(
        update={"references": {"baseline_decode_tok_s": 100.0, "decode_tok_s": 300.0}}
    )
    later = _report("A", {1: 110.0, 8: 400.0}).model_copy(
        update={"references": {"baseline_decode_tok_s": 100.0, "decode_tok_s": 150.0}}
    )
    result = compare([first, _report("B", {1: 150.0}), later, _report("B", {1: 160.0})], ["a", "b", "c", "d"])
    assert [row.concurrency for row in result.rows] == [1] and result.references.speedup == 3.0


@pytest.mark.parametrize(
    ("base", "lines"),
    [
        ([0.0, 0.0, 100.0], []),  # A's median rate is 0: no speedup line, though one round paired up
        (
            [0.0, 100.0, 100.0],
            [
                "speedup B over A at concurrency 1: 3.00x (100.0 -> 300.0 median decode tok/s, 3.00x..3.00x over 2 rounds)"
            ],
        ),
    ],
)
def test_a_speedup_line_needs_both_variants_median_rates(base: list, lines: list) -> None:
    assert headline(_rounds({"A": base, "B": [300.0, 300.0, 300.0]})) == lines
