"""watch's figures from two scrapes: recorded vLLM texts (tests/measure/data), generated multi-engine texts with a
counter reset, Prometheus query results, and the judging against the profile's targets."""

from __future__ import annotations

from pathlib import Path

import pytest

from k3deploy.errors import MetricsFormatError
from k3deploy.observe.watch_figures import (
    DeltaTracker,
    WatchFigures,
    below_targets,
    figures_between,
    figures_from_queries,
    judge,
    parse_scrape,
)
from k3deploy.profile.model import TargetsSpec

DATA = Path(__file__).parent.parent / "measure" / "data"


def _recorded(name: str, started: float, finished: float):
    return parse_scrape((DATA / name).read_text(encoding="utf-8"), started, finished)


def test_recorded_window_gives_every_figure() -> None:
    fig = figures_between(_recorded("metrics_before.prom", 9.5, 10.0), _recorded("metrics_after.prom", 14.0, 14.5))
    assert fig.window_s == 4.0
    assert fig.output_tokens == 144 - 48 and fig.output_tok_s == 96 / 4
    # Two requests finished in the window: TPOT sum grew by 0.00551 - 0.00271 s over a count of 2.
    assert fig.finished_requests == 2
    assert fig.decode_tok_s == pytest.approx(2 / (0.00551036480851024 - 0.0027129995531895283))
    assert fig.ttft_s == pytest.approx((1.5912959575653076 - 1.5652711391448975) / 2)
    assert (fig.running, fig.waiting, fig.kv_cache_usage) == (0, 0, 0)
    assert fig.prefix_cache_hit_rate == 0 / 132
    assert (fig.drafts, fig.accepted_tokens) == (22, 51)
    assert fig.acceptance_rate == 51 / 56 and fig.mean_acceptance_length == 1 + 51 / 22
    assert fig.per_position_acceptance == {0: 21 / 22, 1: 16 / 22, 2: 14 / 22}
    assert fig.counter_resets == [] and fig.notes == []


def _engine_text(engines: dict[str, dict[str, float]]) -> str:
    """Two-engine vLLM exposition: counters, the TPOT/TTFT histograms (sum, count, one bucket), gauges."""
    families = {
        "vllm:generation_tokens": "counter",
        "vllm:spec_decode_num_drafts": "counter",
        "vllm:spec_decode_num_draft_tokens": "counter",
        "vllm:spec_decode_num_accepted_tokens": "counter",
        "vllm:prefix_cache_queries": "counter",
        "vllm:prefix_cache_hits": "counter",
        "vllm:num_requests_running": "gauge",
        "vllm:num_requests_waiting": "gauge",
        "vllm:kv_cache_usage_perc": "gauge",
    }
    lines: list[str] = []
    for family, kind in families.items():
        lines.append(f"# TYPE {family} {kind}")
        sample = family + ("_total" if kind == "counter" else "")
        lines += [f'{sample}{{engine="{e}",model_name="m"}} {v[family]}' for e, v in engines.items()]
    for hist in ("vllm:request_time_per_output_token_seconds", "vllm:time_to_first_token_seconds"):
        lines.append(f"# TYPE {hist} histogram")
        for e, v in engines.items():
            count, total = v[hist]
            lines += [
                f'{hist}_bucket{{engine="{e}",le="+Inf",model_name="m"}} {count}',
                f'{hist}_count{{engine="{e}",model_name="m"}} {count}',
                f'{hist}_sum{{engine="{e}",model_name="m"}} {total}',
            ]
    return "\n".join(lines) + "\n"


def _engine(
    gen: float,
    drafts: float,
    draft_tokens: float,
    accepted: float,
    queries: float,
    hits: float,
    tpot: tuple[float, float],
    ttft: tuple[float, float],
    running: float = 0,
    waiting: float = 0,
    kv: float = 0.0,
) -> dict[str, object]:
    return {
        "vllm:generation_tokens": gen,
        "vllm:spec_decode_num_drafts": drafts,
        "vllm:spec_decode_num_draft_tokens": draft_tokens,
        "vllm:spec_decode_num_accepted_tokens": accepted,
        "vllm:prefix_cache_queries": queries,
        "vllm:prefix_cache_hits": hits,
        "vllm:num_requests_running": running,
        "vllm:num_requests_waiting": waiting,
        "vllm:kv_cache_usage_perc": kv,
        "vllm:request_time_per_output_token_seconds": tpot,
        "vllm:time_to_first_token_seconds": ttft,
    }


def test_two_engines_one_restarted_counts_from_its_restart() -> None:
    before = parse_scrape(
        _engine_text(
            {
                "0": _engine(1000, 100, 300, 240, 5000, 1000, (10, 0.5), (10, 2.0)),
                "1": _engine(9000, 900, 2700, 2000, 40000, 8000, (90, 4.5), (90, 18.0)),
            }
        ),
        0.0,
        0.1,
    )
    # Engine 1 restarted between the scrapes: every one of its counters (histograms too) went down.
    after = parse_scrape(
        _engine_text(
            {
                "0": _engine(1400, 140, 420, 330, 6000, 1400, (14, 0.7), (14, 2.8), running=3, waiting=1, kv=0.25),
                "1": _engine(200, 20, 60, 40, 1000, 100, (2, 0.1), (2, 0.4), running=2, waiting=4, kv=0.75),
            }
        ),
        2.1,
        2.2,
    )
    fig = figures_between(before, after)
    assert fig.window_s == pytest.approx(2.0)
    assert fig.output_tokens == 400 + 200 and fig.output_tok_s == pytest.approx(300)
    assert fig.finished_requests == 4 + 2
    assert fig.decode_tok_s == pytest.approx(6 / (0.2 + 0.1))  # 20 tok/s: TPOT 50 ms
    assert fig.ttft_s == pytest.approx((0.8 + 0.4) / 6)
    assert (fig.running, fig.waiting) == (5, 5)
    assert fig.kv_cache_usage == 0.75  # the fullest engine, not the sum or mean
    assert fig.prefix_cache_hit_rate == pytest.approx((400 + 100) / (1000 + 1000))
    assert (fig.drafts, fig.accepted_tokens) == (40 + 20, 90 + 40)
    assert fig.mean_acceptance_length == pytest.approx(1 + 130 / 60)
    assert fig.acceptance_rate == pytest.approx(130 / 180)
    assert 'vllm:generation_tokens_total{engine="1",model_name="m"}' in fig.counter_resets
    assert 'vllm:request_time_per_output_token_seconds_sum{engine="1",model_name="m"}' in fig.counter_resets
    assert 'vllm:prefix_cache_hits_total{engine="1",model_name="m"}' in fig.counter_resets
    assert not any('engine="0"' in name for name in fig.counter_resets)


def test_idle_window_has_no_rates_to_judge() -> None:
    text = _engine_text({"0": _engine(100, 10, 30, 20, 50, 5, (3, 0.1), (3, 0.3))})
    fig = figures_between(parse_scrape(text, 0.0, 0.1), parse_scrape(text, 5.1, 5.2))
    assert fig.output_tok_s == 0 and fig.finished_requests == 0
    # Nothing finished, nothing drafted: unknown, not zero, and so never "below target".
    assert fig.decode_tok_s is None and fig.ttft_s is None and fig.prefix_cache_hit_rate is None
    assert fig.mean_acceptance_length is None and fig.acceptance_rate is None
    assert below_targets(fig, TargetsSpec(decode_tok_s=5, min_acceptance_length=2)) == []


def test_server_without_spec_decode_or_histograms() -> None:
    text = '# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total{engine="0"} %s\n'
    fig = figures_between(parse_scrape(text % 10, 0, 0), parse_scrape(text % 60, 1, 1))
    assert fig.output_tok_s == 50 and fig.drafts is None and fig.mean_acceptance_length is None
    assert fig.decode_tok_s is None and fig.finished_requests is None and fig.running is None


def test_non_finite_counter_is_named_not_counted() -> None:
    ok = _engine_text({"0": _engine(100, 10, 30, 20, 50, 5, (3, 0.1), (3, 0.3))})
    bad = ok.replace(
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10',
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} NaN',
    )
    fig = figures_between(parse_scrape(ok, 0, 0), parse_scrape(bad, 1, 1))
    assert fig.mean_acceptance_length is None
    assert any("non-finite" in note and "spec_decode_num_drafts_total" in note for note in fig.notes)


def test_tracker_needs_two_scrapes() -> None:
    tracker = DeltaTracker()
    assert tracker.update(_recorded("metrics_before.prom", 0, 1)) is None
    fig = tracker.update(_recorded("metrics_after.prom", 3, 4))
    assert fig is not None and fig.output_tokens == 96 and fig.window_s == 2
    # The next window is measured from the latest scrape, not the first.
    again = tracker.update(_recorded("metrics_after.prom", 6, 7))
    assert again is not None and again.output_tokens == 0 and again.window_s == 2


def test_not_prometheus_text_is_refused() -> None:
    with pytest.raises(MetricsFormatError):
        parse_scrape("<html>login</html>\n", 0, 0)


def test_judge_marks_only_figures_below_their_targets() -> None:
    fig = WatchFigures(output_tok_s=500, decode_tok_s=300, mean_acceptance_length=3.2, kv_cache_usage=0.5)
    rows = {row.key: row for row in judge(fig, TargetsSpec(decode_tok_s=370, min_acceptance_length=3.0))}
    assert rows["decode_tok_s"].below and rows["decode_tok_s"].target == 370
    assert not rows["mean_acceptance_length"].below and rows["mean_acceptance_length"].target == 3.0
    assert rows["output_tok_s"].target is None and not rows["output_tok_s"].below
    assert below_targets(fig, TargetsSpec(decode_tok_s=370, min_acceptance_length=3.5)) == [
        "decode_tok_s",
        "mean_acceptance_length",
    ]
    assert below_targets(fig, TargetsSpec()) == []  # a profile without targets marks nothing
    assert (
        below_targets(WatchFigures(decode_tok_s=370), TargetsSpec(decode_tok_s=370)) == []
    )  # at the target is not below


def test_figures_from_prometheus_results() -> None:
    fig = figures_from_queries(
        {
            "output_tok_s": [({}, 812.5)],
            "decode_tok_s": [({}, 401.0)],
            "ttft_s": [({}, float("nan"))],  # 0/0 in PromQL: nothing finished in the window
            "running": [],  # no series
            "mean_acceptance_length": [({}, 3.4)],
            "per_position_acceptance": [({"position": "1"}, 0.8), ({"position": "0"}, 0.95), ({"position": "x"}, 1.0)],
            "not_a_figure": [({}, 1.0)],
        }
    )
    assert (fig.output_tok_s, fig.decode_tok_s, fig.mean_acceptance_length) == (812.5, 401.0, 3.4)
    assert fig.ttft_s is None and fig.running is None
    assert fig.per_position_acceptance == {0: 0.95, 1: 0.8}
    assert list(fig.per_position_acceptance) == [0, 1]
