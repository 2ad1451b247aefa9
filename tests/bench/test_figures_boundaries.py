"""Bench's figure rules pinned (the survivors of tests/mutation/run on k3deploy/bench/figures.py): the client-vs-server
token cross-check, summing cells' server counters, the window and the aggregate rate (one cell's, and a pooled
overall's over the summed windows of the cells it pools)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from k3deploy.bench.figures import (
    OVERALL,
    Sent,
    cell_figures,
    compact,
    decode_figure,
    pooled,
    server_delta,
    spread,
    sum_server,
    token_mismatches,
    window,
)
from k3deploy.measure.metrics import spec_decode_figures
from k3deploy.report.bench import BenchRequest, CellFigures, Point, ServerDelta
from k3deploy.report.smoke import MetricsDelta, RequestRecord


def _req(
    t_send: float, t_end: float, tokens: int, *, ok: bool = True, bursty: bool = False, **extra: object
) -> BenchRequest:
    return BenchRequest(
        category="a",
        concurrency=1,
        prompt_id="p",
        ok=ok,
        t_send=t_send,
        t_end=t_end,
        completion_tokens=tokens,
        decode_tok_s=100.0,
        e2e_tok_s=40.0,
        bursty=bursty,
        **extra,
    )


def _sent(request: BenchRequest) -> Sent:
    """The request with a stampless record: no chunk offsets, so no vLLM timing (only the bench record's figures)."""
    record = RequestRecord(
        index=0,
        phase="measured",
        prompt_id=request.prompt_id,
        ok=request.ok,
        max_tokens=request.completion_tokens or 1,
        t_send=request.t_send,
        t_end=request.t_end,
        completion_tokens=request.completion_tokens,
    )
    return Sent(record=record, request=request)


def _cell(category: str, concurrency: int, requests: Sequence[BenchRequest], server: ServerDelta | None) -> CellFigures:
    return cell_figures(category, Point(concurrency=concurrency), [_sent(r) for r in requests], server, None)


def _server(tokens: float | None, *, available: bool = True, drafts: float = 10.0) -> ServerDelta:
    spec = spec_decode_figures(drafts, drafts * 4, drafts * 2, {0: drafts, 1: drafts})
    return ServerDelta(
        available=available, generation_tokens=tokens, spec_decode=spec, error=None if available else "x"
    )


def test_a_cell_whose_client_and_server_token_counts_differ_is_named() -> None:
    same = _cell("a", 1, [_req(0, 1, 32)], _server(32.0))
    off_by_one = _cell("a", 4, [_req(0, 1, 32)], _server(33.0))
    assert token_mismatches([same]) == []
    assert token_mismatches([same, off_by_one]) == [
        "a @ concurrency 4: client counted 32 tokens, the server's vllm:generation_tokens_total rose by 33"
    ]


def test_no_cross_check_without_a_usable_server_count() -> None:
    unread = _cell("a", 1, [_req(0, 1, 32)], _server(99.0, available=False))
    unknown = _cell("a", 1, [_req(0, 1, 32)], _server(None))
    none = _cell("a", 1, [_req(0, 1, 32)], None)
    assert token_mismatches([unread, unknown, none]) == []


def test_summed_cells_add_counters_and_recompute_the_ratios() -> None:
    total = sum_server([_server(10.0, drafts=10.0), _server(20.0, drafts=30.0)])
    assert total is not None and total.available and total.generation_tokens == 30.0
    assert total.spec_decode is not None
    assert (total.spec_decode.drafts, total.spec_decode.accepted_tokens) == (40.0, 80.0)
    assert total.spec_decode.mean_acceptance_length == 3.0
    assert total.spec_decode.accepted_per_position == {0: 40.0, 1: 40.0}
    assert sum_server([None, None]) is None
    one_blind = sum_server([_server(10.0), _server(5.0, available=False)])
    assert one_blind is not None and (one_blind.available, one_blind.error) == (False, "x")
    partial = sum_server([_server(10.0), ServerDelta(available=True, generation_tokens=None)])
    assert partial is not None and partial.generation_tokens is None and partial.spec_decode is None


def test_server_delta_keeps_why_it_is_missing() -> None:
    assert server_delta(None).error == "no /metrics scrape"
    assert server_delta(MetricsDelta(available=False, error="404"), None).error == "404"
    assert server_delta(MetricsDelta(available=False, error="404"), "timeout").error == "timeout"
    kept = server_delta(MetricsDelta(available=True, window_s=1.0, generation_tokens=7.0))
    assert kept.available and kept.generation_tokens == 7.0


def test_the_window_runs_from_the_first_send_to_the_last_chunk() -> None:
    requests = [_req(2.0, 9.0, 1, t_last=8.0), _req(1.0, 5.0, 1)]
    assert window(requests) == 7.0  # 1.0 to 8.0: the last chunk, not the stream's end, where there is one
    assert window([]) is None
    assert window([_req(3.0, 3.0, 1)]) is None


def test_failed_requests_count_and_add_tokens_but_no_timings() -> None:
    cell = _cell("a", 1, [_req(0, 2, 10), _req(0, 2, 6, ok=False), _req(0, 2, 4, bursty=True)], None)
    assert (cell.requests, cell.failed, cell.bursty, cell.completion_tokens) == (3, 1, 1, 20)
    assert cell.decode_tok_s.count == 2 and cell.decode_tok_s.median == 70.0  # 100 and the bursty one's 40
    assert cell.aggregate_tok_s == 10.0  # 20 tokens over 2 s


def test_overall_aggregate_is_tokens_over_the_summed_cell_windows() -> None:
    first, second = [_req(0, 2, 10)], [_req(10, 14, 30)]
    assert (_cell("a", 1, first, None).window_s, _cell("b", 1, second, None).window_s) == (2.0, 4.0)
    runs = [([_sent(r) for r in first], None, None), ([_sent(r) for r in second], None, None)]
    overall = pooled(OVERALL, Point(concurrency=1), runs, repeats=[runs])
    # 6 s busy, not the 14 s from the first send to the last end: the gap between the cells ran no requests.
    assert (overall.window_s, overall.aggregate_tok_s) == (6.0, 40 / 6.0)
    assert (overall.requests, overall.completion_tokens) == (2, 40)
    assert (overall.repeats, overall.spread) == ([], None)  # one repeat of every category: no spread
    twice = pooled(OVERALL, Point(concurrency=1), runs, repeats=[runs[:1], runs[1:]])
    assert (len(twice.repeats), twice.spread, twice.window_s) == (2, 0.0, 6.0)  # two repeats: a spread (both 100)
    empty = pooled(OVERALL, Point(concurrency=1), [])
    assert (empty.window_s, empty.aggregate_tok_s) == (None, None)


def _stamped(ok: bool = True) -> RequestRecord:
    return RequestRecord(
        index=0,
        phase="measured",
        prompt_id="p",
        ok=ok,
        max_tokens=5,
        concurrency=4,
        t_send=1.2345678,
        t_end=3.3333333,
        t_first=1.7345678,
        t_last=1.9876543,
        prompt_tokens=9,
        completion_tokens=5,
        chunk_offsets_s=[0.5, 0.75, 2.25],
        chunk_tokens=[1, 2, 2],
        ttft_s=0.1234567,
        decode_tok_s=12.3456789,
        e2e_tok_s=2.7182818,
        tokens_per_chunk=1.6666667,
    )


def test_a_compact_record_keeps_vllms_figures_in_ms_rounded_to_the_microsecond() -> None:
    kept = compact(_stamped(), "a", request_rate=2.0, repeat=3, t_arrival=0.1111111)
    assert (kept.t_send, kept.t_end, kept.ttft_s, kept.t_last) == (1.234568, 3.333333, 0.123457, 1.987654)
    assert (kept.decode_tok_s, kept.e2e_tok_s, kept.tokens_per_chunk) == (12.345679, 2.718282, 1.666667)
    # TPOT: (2.25 - 0.5) s over the 4 tokens after the first; ITL: the gaps 0.25 s and 1.5 s (not 1 s, which reads
    # the same in ms whether multiplied by 1000 or divided into it); E2EL: the last chunk.
    assert (kept.tpot_ms, kept.itl_ms_mean, kept.itl_ms_max, kept.e2el_ms) == (437.5, 875.0, 1500.0, 2250.0)
    assert (kept.chunks, kept.concurrency, kept.prompt_tokens, kept.completion_tokens) == (3, 4, 9, 5)
    assert (kept.request_rate, kept.repeat, kept.t_arrival, kept.good) == (2.0, 3, 0.111111, None)
    assert (compact(_stamped(), "a").t_arrival, compact(_stamped(), "a").repeat) == (None, 0)


@pytest.mark.parametrize(("ttft_ms", "good"), [(500.0, True), (499.0, False)])
def test_a_request_is_good_when_its_ttft_is_at_most_the_slo(ttft_ms: float, good: bool) -> None:
    assert compact(_stamped(), "a", slo={"ttft": ttft_ms}).good is good


def test_a_failed_request_has_no_vllm_figures_and_is_never_good() -> None:
    failed = compact(_stamped(ok=False), "a", slo={"ttft": 1e9})
    assert (failed.tpot_ms, failed.e2el_ms, failed.itl_ms_mean, failed.itl_ms_max, failed.good) == (
        None,
        None,
        None,
        None,
        False,
    )
    assert compact(_stamped(ok=False), "a").good is None


def test_a_bursty_requests_decode_figure_is_its_end_to_end_rate_a_lower_bound() -> None:
    assert decode_figure(_req(0, 1, 8, bursty=True)) == 40.0
    assert decode_figure(_req(0, 1, 8)) == 100.0


def test_a_missing_server_delta_is_unavailable() -> None:
    assert not server_delta(None).available
    assert not server_delta(MetricsDelta(available=False, error="404")).available


def test_only_good_bursty_requests_are_counted_bursty() -> None:
    cell = _cell(
        "a", 1, [_req(0, 2, 1), _req(0, 2, 1), _req(0, 2, 1, bursty=True), _req(0, 2, 1, ok=False, bursty=True)], None
    )
    assert (cell.requests, cell.failed, cell.bursty) == (4, 1, 1)


def test_spread_is_the_range_over_the_median_and_needs_two_values_and_a_nonzero_median() -> None:
    # The median of an even count is the mean of the middle two (2.5 here, not a rank beside it): 9 / 2.5.
    assert spread([1.0, 2.0, 3.0, 10.0]) == pytest.approx(3.6)
    assert spread([2.0, None, 4.0]) == pytest.approx(2.0 / 3.0)  # a missing repeat is left out
    assert spread([5.0]) is None and spread([5.0, None]) is None and spread([]) is None  # one value has no spread
    assert spread([0.0, 0.0]) is None  # a zero median: no ratio, rather than a division by zero


def _timed_run(duration_s: float | None) -> tuple[list[Sent], None, float | None]:
    """A run of one stamped request (5 output tokens, so vLLM's throughput counts it) lasting `duration_s`."""
    record = _stamped()
    return [Sent(record=record, request=compact(record, "a"))], None, duration_s


def test_pooled_throughput_is_over_the_summed_durations_of_the_runs_and_needs_every_duration() -> None:
    # The runs ran one after another: 10 output tokens over 2 s + 3 s.
    both = pooled("a", Point(concurrency=1), [_timed_run(2.0), _timed_run(3.0)])
    assert (both.throughput.duration_s, both.throughput.output_throughput) == (5.0, 2.0)
    # One run's duration unknown: no duration at all, rather than a rate over the other run's 2 s alone.
    blind = pooled("a", Point(concurrency=1), [_timed_run(2.0), _timed_run(None)])
    assert (blind.throughput.duration_s, blind.throughput.output_throughput) == (None, None)
    # Durations summing to zero are no duration: no rate, rather than a division by zero.
    instant = pooled("a", Point(concurrency=1), [_timed_run(0.0), _timed_run(0.0)])
    assert (instant.throughput.duration_s, instant.throughput.output_throughput) == (None, None)


def test_pooled_window_sums_the_runs_windows_and_a_run_without_a_window_adds_nothing() -> None:
    timed = [_sent(_req(0, 2, 10))]  # a 2 s window
    refused = [_sent(_req(5, 5, 0, ok=False))]  # failed at once: sent and ended together, no window
    assert (window([r.request for r in timed]), window([r.request for r in refused])) == (2.0, None)
    cell = pooled("a", Point(concurrency=1), [(timed, None, None), (refused, None, None)])
    assert (cell.window_s, cell.aggregate_tok_s) == (2.0, 5.0)  # 10 tokens over 2 s, not over 2 s and a guess
    no_window = pooled("a", Point(concurrency=1), [(refused, None, None), (refused, None, None)])
    assert (no_window.window_s, no_window.aggregate_tok_s) == (None, None)
