"""The /metrics rules pinned at their boundaries, both sides (the survivors of tests/mutation/run on
k3deploy/measure/metrics.py): which samples are kept, what a tolerant parse skips and names, when a counter was reset,
which ratios exist with no drafts, and the window between two scrapes."""

from __future__ import annotations

import pytest

from k3deploy.errors import MetricsFormatError
from k3deploy.measure.metrics import (
    ACCEPTED,
    ACCEPTED_PER_POS,
    DRAFT_TOKENS,
    DRAFTS,
    GENERATION_TOKENS,
    PROMPT_TOKENS,
    counter_increase,
    diff,
    parse_metrics,
    parse_metrics_tolerant,
    spec_decode_figures,
)


def _exposition(values: dict[str, float], engine: str = "0", extra: str = "") -> str:
    lines = []
    for name, value in values.items():
        family = name.removesuffix("_total")
        lines += [f"# TYPE {family} counter", f'{name}{{engine="{engine}",model_name="m"{extra}}} {value}']
    return "\n".join(lines) + "\n"


def _key(name: str, engine: str = "0") -> tuple[str, tuple[tuple[str, str], ...]]:
    return (name, (("engine", engine), ("model_name", "m")))


def test_only_the_named_counters_are_kept_and_the_scrape_ends_when_it_began_unless_told() -> None:
    text = _exposition({GENERATION_TOKENS: 5.0}) + "# TYPE other counter\nother_total 3\n"
    snap = parse_metrics(text, 2.0)
    assert snap.series == {_key(GENERATION_TOKENS): 5.0} and (snap.started, snap.finished) == (2.0, 2.0)
    assert parse_metrics(text, 2.0, 2.5).finished == 2.5
    assert parse_metrics(text, 2.0, names={"other_total"}).series == {("other_total", ()): 3.0}
    assert snap.names() == {GENERATION_TOKENS} and (snap.non_finite, snap.malformed) == ((), ())


def test_a_tolerant_parse_of_good_text_is_the_strict_parse() -> None:
    text = _exposition({GENERATION_TOKENS: 5.0, PROMPT_TOKENS: 7.0})
    assert parse_metrics_tolerant(text, 1.0, 3.0) == parse_metrics(text, 1.0, 3.0)


def test_a_tolerant_parse_skips_the_lines_that_do_not_parse_and_names_them_by_number() -> None:
    bad = "x" * 100 + " {"
    text = (
        "# HELP vllm:generation_tokens counter\n"
        '\nvllm:generation_tokens_total{engine="0",model_name="m"} 5\n'
        f"{bad}\n"
        '   # a comment\nvllm:prompt_tokens_total{engine="0",model_name="m"} NaN\n'
        'vllm:prompt_tokens_total{engine="1",model_name="m"} 4\n'
        "broken{ 1\n"
    )
    snap = parse_metrics_tolerant(text, 1.0, 3.0)
    assert snap.series == {_key(GENERATION_TOKENS): 5.0, _key(PROMPT_TOKENS, "1"): 4.0}
    assert snap.non_finite == ('vllm:prompt_tokens_total{engine="0",model_name="m"}=nan',)
    assert snap.malformed == (f"line 4: {bad[:80]!r}", "line 8: 'broken{ 1'")
    assert (snap.started, snap.finished) == (1.0, 3.0)
    assert parse_metrics_tolerant(text, 1.0).finished == 1.0


@pytest.mark.parametrize(
    ("text", "why"),
    [("<html>{ login\n<p>{ sign in\n", "no line parses (line 1: '<html>{ login')"), ("{\n", "no line parses (line 1")],
)
def test_text_of_which_no_line_parses_is_not_metrics(text: str, why: str) -> None:
    with pytest.raises(MetricsFormatError) as caught:
        parse_metrics_tolerant(text, 0.0)
    assert why in str(caught.value)


def test_a_tolerant_parse_of_comments_only_says_empty() -> None:
    with pytest.raises(MetricsFormatError, match=r"no line parses \(empty\)"):
        parse_metrics_tolerant("# HELP x a {\n\n# TYPE x {\n", 0.0)  # the whole text fails on its TYPE line


@pytest.mark.parametrize(("before", "after", "increase"), [(7.0, 6.0, 6.0), (7.0, 7.0, 0.0), (7.0, 8.0, 1.0)])
def test_only_a_counter_that_went_down_was_reset(before: float, after: float, increase: float) -> None:
    assert counter_increase(before, after) == increase
    delta = diff(
        parse_metrics(_exposition({GENERATION_TOKENS: before}), 0.0),
        parse_metrics(_exposition({GENERATION_TOKENS: after}), 1.0),
    )
    assert delta.generation_tokens == increase
    assert delta.counter_resets == (
        ['vllm:generation_tokens_total{engine="0",model_name="m"}'] if after < before else []
    )


def test_a_series_new_in_the_second_scrape_counts_from_zero_and_is_no_reset() -> None:
    before = parse_metrics(_exposition({GENERATION_TOKENS: 10.0}), 0.0)
    after = parse_metrics(_exposition({GENERATION_TOKENS: 10.0}) + _exposition({GENERATION_TOKENS: 4.0}, "1"), 1.0)
    delta = diff(before, after)
    assert (delta.generation_tokens, delta.counter_resets) == (4.0, [])


def test_counters_absent_from_the_second_scrape_are_unknown_not_zero() -> None:
    delta = diff(parse_metrics("", 0.0), parse_metrics("", 1.0))
    assert (delta.generation_tokens, delta.prompt_tokens, delta.server_tok_s, delta.spec_decode) == (
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize(("started", "rate"), [(2.0, None), (1.5, None), (2.5, 40.0), (4.0, 10.0)])
def test_the_server_rate_is_over_the_gap_between_the_scrapes_and_none_without_one(
    started: float, rate: float | None
) -> None:
    before = parse_metrics(_exposition({GENERATION_TOKENS: 0.0}), 1.0, 2.0)
    after = parse_metrics(_exposition({GENERATION_TOKENS: 20.0}), started, 9.0)
    delta = diff(before, after)
    assert delta.window_s == started - 2.0 and delta.server_tok_s == rate


@pytest.mark.parametrize("name", [DRAFTS, DRAFT_TOKENS, ACCEPTED])
def test_any_one_spec_decode_counter_makes_the_figures_with_the_others_as_zero(name: str) -> None:
    delta = diff(parse_metrics(_exposition({name: 1.0}), 0.0), parse_metrics(_exposition({name: 3.0}), 1.0))
    spec = delta.spec_decode
    assert spec is not None
    counts = {DRAFTS: spec.drafts, DRAFT_TOKENS: spec.draft_tokens, ACCEPTED: spec.accepted_tokens}
    assert counts == {n: (2.0 if n == name else 0.0) for n in counts}


def test_only_numbered_positions_of_the_per_position_counter_are_summed_over_engines() -> None:
    per_pos = (
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n"
        + "".join(
            f'{ACCEPTED_PER_POS}{{engine="{e}",position="{p}"}} {v}\n'
            for e, p, v in [("0", "0", 4), ("1", "0", 5), ("0", "1", 2), ("0", "x", 9)]
        )
        + f'{ACCEPTED_PER_POS}{{engine="0"}} 7\n'
    )
    drafts = _exposition({DRAFTS: 10.0})
    delta = diff(parse_metrics(drafts, 0.0), parse_metrics(drafts.replace(" 10.0", " 20.0") + per_pos, 1.0))
    assert delta.spec_decode is not None and delta.spec_decode.accepted_per_position == {0: 9.0, 1: 2.0}
    assert list(delta.spec_decode.per_position_rates) == [0, 1]
    assert delta.spec_decode.per_position_rates == {0: 0.9, 1: 0.2}


@pytest.mark.parametrize(("drafts", "has_ratio"), [(0.0, False), (-1.0, False), (0.5, True)])
def test_ratios_over_drafts_exist_only_for_a_positive_count(drafts: float, has_ratio: bool) -> None:
    spec = spec_decode_figures(drafts, drafts, 1.0, {0: 1.0})
    assert (spec.acceptance_rate is not None) is has_ratio
    assert (spec.mean_acceptance_length is not None) is has_ratio
    assert bool(spec.per_position_rates) is has_ratio
    if has_ratio:
        assert (spec.acceptance_rate, spec.mean_acceptance_length, spec.per_position_rates) == (2.0, 3.0, {0: 2.0})


def test_the_first_non_finite_series_of_a_spec_decode_counter_is_the_one_named() -> None:
    before = parse_metrics(_exposition({DRAFTS: 1.0}), 0.0)
    text = _exposition({DRAFTS: float("nan")}) + _exposition({DRAFTS: float("inf")}, "1")
    after = parse_metrics(text, 1.0)
    delta = diff(before, after)
    assert delta.error == (
        '/metrics reported a non-finite spec-decode counter: vllm:spec_decode_num_drafts_total{engine="0",model_name="m"}=nan'
    )
    # A non-finite series in the first scrape makes the window as blind as one in the second.
    first = parse_metrics(_exposition({ACCEPTED: float("inf")}), 0.0)
    broken_before = diff(first, parse_metrics(_exposition({ACCEPTED: 2.0}), 1.0))
    assert broken_before.error == f"/metrics reported a non-finite spec-decode counter: {first.non_finite[0]}"


@pytest.mark.parametrize(("started", "rate"), [(2.0, None), (3.0, 5.0), (4.5, 2.0)])
def test_a_blind_spec_decode_delta_still_gives_the_server_rate_over_a_positive_window(
    started: float, rate: float | None
) -> None:
    before = parse_metrics(_exposition({GENERATION_TOKENS: 0.0, PROMPT_TOKENS: 1.0}), 1.0, 2.0)
    after = parse_metrics(_exposition({GENERATION_TOKENS: 5.0, PROMPT_TOKENS: 4.0, DRAFTS: float("nan")}), started, 9.0)
    delta = diff(before, after)
    assert not delta.available and delta.spec_decode is None
    assert (delta.window_s, delta.generation_tokens, delta.prompt_tokens, delta.server_tok_s) == (
        started - 2.0,
        5.0,
        3.0,
        rate,
    )


def test_a_reset_in_a_blind_window_is_still_reported() -> None:
    before = parse_metrics(_exposition({GENERATION_TOKENS: 9.0}), 0.0)
    after = parse_metrics(_exposition({GENERATION_TOKENS: 5.0, ACCEPTED: float("nan")}), 1.0)
    assert diff(before, after).counter_resets == ['vllm:generation_tokens_total{engine="0",model_name="m"}']


def test_a_non_finite_prompt_counter_leaves_the_prompt_figure_unknown() -> None:
    before = parse_metrics(_exposition({PROMPT_TOKENS: 1.0}), 0.0)
    after = parse_metrics(_exposition({PROMPT_TOKENS: float("inf"), GENERATION_TOKENS: 3.0}), 1.0)
    delta = diff(before, after)
    assert delta.available and (delta.prompt_tokens, delta.generation_tokens) == (None, 3.0)


def test_of_several_non_finite_spec_decode_counters_the_drafts_one_is_named_first() -> None:
    before = parse_metrics(_exposition({DRAFTS: 1.0}), 0.0)
    after = parse_metrics(_exposition({ACCEPTED: float("inf"), DRAFTS: float("nan")}), 1.0)
    error = diff(before, after).error
    assert error == (
        "/metrics reported a non-finite spec-decode counter: "
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"}=nan'
    )
