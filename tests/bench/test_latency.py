"""vLLM-defined latency figures from request records: hand-made stamps, checked against numpy's own statistics."""

from __future__ import annotations

import numpy as np
import pytest

from k3deploy.bench import latency
from k3deploy.errors import UsageError
from k3deploy.report.smoke import RequestRecord


def record(t_send: float, offsets: list[float], tokens: int, prompt: int = 10, ok: bool = True) -> RequestRecord:
    return RequestRecord(
        index=0,
        phase="measured",
        prompt_id="p",
        ok=ok,
        max_tokens=tokens,
        t_send=t_send,
        t_first=t_send + offsets[0],
        t_last=t_send + offsets[-1],
        t_end=t_send + offsets[-1] + 0.001,
        prompt_tokens=prompt,
        completion_tokens=tokens,
        chunk_offsets_s=offsets,
    )


RECORDS = [
    record(0.0, [0.100, 0.120, 0.150, 0.160], 7),  # a speculative chunking: 4 chunks, 7 tokens
    record(0.5, [0.050, 0.060, 0.075], 3),
    record(1.0, [0.300], 1),  # one token: no TPOT (0 for goodput), no ITL
    record(2.0, [0.010, 0.020], 2, ok=False),  # failed: left out, counted
]


def test_per_request_figures_are_vllms() -> None:
    t = latency.timing(RECORDS[0])
    assert t is not None
    assert t.ttft_s == pytest.approx(0.100) and t.e2el_s == pytest.approx(0.160)
    assert t.tpot_s == pytest.approx((0.160 - 0.100) / 6)  # (latency - ttft) / (output_len - 1)
    assert t.itl_s == pytest.approx((0.020, 0.030, 0.010))
    assert latency.timing(RECORDS[2]).tpot_s is None
    assert latency.timing(RECORDS[3]) is None


def test_distributions_and_throughput_match_numpy() -> None:
    timings = [t for t in map(latency.timing, RECORDS) if t is not None]
    qs = latency.parse_percentiles("25,99.9")
    assert qs == [25.0, 50.0, 90.0, 95.0, 99.0, 99.9]
    lat = latency.latencies(timings, qs)
    itls = np.array([0.020, 0.030, 0.010, 0.010, 0.015]) * 1000
    assert lat.itl_ms.count == 5
    assert lat.itl_ms.mean == pytest.approx(itls.mean()) and lat.itl_ms.std == pytest.approx(itls.std())
    for q in qs:
        assert lat.itl_ms.at(q) == pytest.approx(np.percentile(itls, q))
    ttfts = np.array([0.100, 0.050, 0.300]) * 1000
    assert lat.ttft_ms.median == pytest.approx(np.median(ttfts)) and lat.ttft_ms.at(99) == pytest.approx(
        np.percentile(ttfts, 99)
    )
    assert lat.tpot_ms.count == 2  # the 1-token answer has no TPOT
    tp = latency.throughput(timings, len(RECORDS), 4.0, {"ttft": 120.0, "tpot": 20.0})
    assert (tp.completed, tp.failed, tp.total_output_tokens, tp.total_input_tokens) == (3, 1, 11, 30)
    assert tp.request_throughput == pytest.approx(3 / 4) and tp.output_throughput == pytest.approx(11 / 4)
    assert tp.total_token_throughput == pytest.approx(41 / 4)
    # ttft <= 120 ms and tpot <= 20 ms: the first (10 ms TPOT) and the second (12.5 ms); the third's TTFT is 300 ms.
    assert tp.good == 2 and tp.request_goodput == pytest.approx(2 / 4)


def test_goodput_and_percentile_flags_are_checked_as_vllm_does() -> None:
    assert latency.parse_goodput(["ttft:500", "tpot:20", "e2el:9000"]) == {"ttft": 500, "tpot": 20, "e2el": 9000}
    for bad in (["itl:5"], ["ttft=5"], ["ttft:-1"], ["ttft:x"]):
        with pytest.raises(UsageError, match="--goodput"):
            latency.parse_goodput(bad)
    with pytest.raises(UsageError, match="--percentiles"):
        latency.parse_percentiles("50,101")
