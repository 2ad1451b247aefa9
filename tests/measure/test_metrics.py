"""/metrics parsing and deltas: recorded vLLM texts (tests/measure/data) plus hand-made resets."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.errors import MetricsFormatError
from k3deploy.measure.metrics import counter_increase, diff, parse_metrics, spec_decode_figures

DATA = Path(__file__).parent / "data"


def _snap(name: str, started: float, finished: float):
    return parse_metrics((DATA / name).read_text(encoding="utf-8"), started, finished)


def test_recorded_window_gives_exact_spec_decode_figures() -> None:
    # The window runs from the end of the first scrape (10.0) to the start of the second (14.0).
    delta = diff(_snap("metrics_before.prom", 9.5, 10.0), _snap("metrics_after.prom", 14.0, 14.75))
    assert delta.available and delta.window_s == 4.0
    assert delta.generation_tokens == 144 - 48 == 96 and delta.server_tok_s == 24.0
    assert delta.prompt_tokens == 132
    spec = delta.spec_decode
    assert spec is not None
    assert (spec.drafts, spec.draft_tokens, spec.accepted_tokens) == (27 - 5, 71 - 15, 56 - 5)
    assert spec.accepted_per_position == {0: 21.0, 1: 16.0, 2: 14.0}
    assert spec.acceptance_rate == 51 / 56 and spec.mean_acceptance_length == 1 + 51 / 22
    assert spec.per_position_rates == {0: 21 / 22, 1: 16 / 22, 2: 14 / 22}
    assert delta.counter_resets == []


def _text(engines: dict[str, tuple[float, float, float, float]], spec: bool = True) -> str:
    lines = ["# TYPE vllm:generation_tokens_total counter"]
    lines += [f'vllm:generation_tokens_total{{engine="{e}",model_name="m"}} {v[0]}' for e, v in engines.items()]
    if spec:
        for i, name in enumerate(("drafts", "draft_tokens", "accepted_tokens"), start=1):
            lines.append(f"# TYPE vllm:spec_decode_num_{name}_total counter")
            lines += [
                f'vllm:spec_decode_num_{name}_total{{engine="{e}",model_name="m"}} {v[i]}' for e, v in engines.items()
            ]
    return "\n".join(lines) + "\n"


def test_sums_over_engines_and_survives_a_counter_reset() -> None:
    before = parse_metrics(_text({"0": (100, 10, 30, 20), "1": (500, 50, 150, 90)}), 0.0)
    # Engine 1 restarted: its counters went down, so its increase is its new value.
    after = parse_metrics(_text({"0": (160, 20, 60, 38), "1": (40, 5, 15, 11)}), 2.0)
    delta = diff(before, after)
    assert delta.generation_tokens == 60 + 40
    assert delta.spec_decode is not None
    assert (delta.spec_decode.drafts, delta.spec_decode.draft_tokens, delta.spec_decode.accepted_tokens) == (15, 45, 29)
    assert delta.spec_decode.mean_acceptance_length == 1 + 29 / 15
    assert delta.counter_resets == [
        'vllm:generation_tokens_total{engine="1",model_name="m"}',
        'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"}',
        'vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="m"}',
        'vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="m"}',
    ]


def test_counter_increase_rule() -> None:
    assert counter_increase(None, 7.0) == 7.0
    assert counter_increase(3.0, 7.0) == 4.0
    assert counter_increase(9.0, 2.0) == 2.0


def test_no_spec_decode_series_means_none() -> None:
    delta = diff(
        parse_metrics(_text({"0": (1, 0, 0, 0)}, spec=False), 0.0),
        parse_metrics(_text({"0": (5, 0, 0, 0)}, spec=False), 1.0),
    )
    assert delta.spec_decode is None and delta.generation_tokens == 4


def test_zero_drafts_gives_no_ratios() -> None:
    spec = spec_decode_figures(0.0, 0.0, 0.0, {})
    assert spec.acceptance_rate is None and spec.mean_acceptance_length is None and spec.per_position_rates == {}


def test_a_body_that_is_not_prometheus_text() -> None:
    with pytest.raises(MetricsFormatError, match="is not Prometheus text"):
        parse_metrics("this is { not prometheus\n", 0.0)


@pytest.mark.parametrize("bad", ["NaN", "+Inf", "-Inf"])
def test_non_finite_counters_are_data_not_numbers(bad: str) -> None:
    before = parse_metrics(_text({"0": (10, 2, 6, 3)}), 0.0, 1.0)
    broken = _text({"0": (30, 6, 18, 9)}).replace(
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 6',
        f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {bad}',
    )
    after = parse_metrics(broken, 2.0, 3.0)
    assert after.non_finite == (f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}}={float(bad)}',)
    delta = diff(before, after)
    assert not delta.available and delta.spec_decode is None
    assert delta.error == f"/metrics reported a non-finite spec-decode counter: {after.non_finite[0]}"
    assert delta.generation_tokens == 20  # what is finite is still measured
    # A non-finite generation counter leaves that figure unknown, never NaN.
    gen = parse_metrics(_text({"0": (10, 2, 6, 3)}).replace("} 10", f"}} {bad}", 1), 2.0, 3.0)
    assert diff(before, gen).generation_tokens is None and diff(before, gen).server_tok_s is None
