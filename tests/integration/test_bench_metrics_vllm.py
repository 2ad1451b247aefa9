"""k3deploy's latency, throughput and goodput figures are vLLM's own: the same streams, fed to vLLM's
`calculate_metrics` (vllm/benchmarks/serve.py, the function `vllm bench serve` reports with), give the same numbers.

The streams are real (the scripted server over real sockets, open loop at a rate, speculative chunks of several
tokens; plus one failed request, which vLLM counts nowhere); each record becomes the RequestFuncOutput vLLM's
request function would have made of it (ttft, itl, latency, output_tokens, prompt_len, success). Needs vLLM
installed (the integration tier), no vLLM server.
"""

from __future__ import annotations

import importlib.util
import itertools

import pytest

from k3deploy.bench import figures
from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.load import load_model
from k3deploy.bench.runner import BenchPlan, measure
from k3deploy.profile import load_profile
from tests.smoke.scripted_server import Script, scripted_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed; run `bash .ci/setup`"),
]

PERCENTILES = [25.0, 50.0, 90.0, 95.0, 99.0, 99.9]


def test_cell_figures_equal_vllm_calculate_metrics() -> None:
    from vllm.benchmarks.datasets import SampleRequest
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncOutput
    from vllm.benchmarks.serve import calculate_metrics

    dataset = load_dataset("builtin", "qualitative")
    plan = BenchPlan(
        dataset,
        select(dataset, ["coding"], None),
        [1],
        24,
        None,
        "vllm-metrics",
        load=load_model([200.0], 0.5, 3, 0.1, seed=5),  # ~20 arrivals within 0.1 s
        percentiles=PERCENTILES,
    )
    with scripted_server(Script(chunk_delay_s=0.001, first_chunk_delay_s=0.003)) as srv:
        measured = measure(load_profile("local-cpu"), srv.url, plan)
    ((sent, server, duration),) = measured.runs[(0, "coding")]
    assert len(sent) >= 8 and all(s.record.ok for s in sent)
    free = figures.cell_figures("coding", plan.points()[0], sent, server, duration, PERCENTILES)
    # SLOs that split the requests (the median TTFT, p90 TPOT), so goodput is really put to the test.
    slo = {"ttft": free.ttft_ms.median, "tpot": free.tpot_ms.at(90), "e2el": 10_000.0}
    cell = figures.cell_figures("coding", plan.points()[0], sent, server, duration, PERCENTILES, slo)

    outputs = []
    for s in sent:
        r = s.record
        offsets = r.chunk_offsets_s
        outputs.append(
            RequestFuncOutput(
                success=True,
                latency=offsets[-1],
                ttft=offsets[0],
                itl=[b - a for a, b in itertools.pairwise(offsets)],
                output_tokens=r.completion_tokens or 0,
                prompt_len=r.prompt_tokens or 0,
                start_time=r.t_send,
            )
        )
    outputs.append(RequestFuncOutput(success=False, error="cut short"))  # a failed request counts nowhere
    inputs = [SampleRequest(prompt="x", prompt_len=o.prompt_len) for o in outputs]
    theirs, _ = calculate_metrics(inputs, outputs, duration, None, PERCENTILES, slo)

    ours = cell.throughput
    assert (ours.completed, ours.total_input_tokens, ours.total_output_tokens) == (
        theirs.completed,
        theirs.total_input,
        theirs.total_output,
    )
    assert ours.request_throughput == pytest.approx(theirs.request_throughput, rel=1e-12)
    assert ours.output_throughput == pytest.approx(theirs.output_throughput, rel=1e-12)
    assert ours.total_token_throughput == pytest.approx(theirs.total_token_throughput, rel=1e-12)
    assert ours.request_goodput == pytest.approx(theirs.request_goodput, rel=1e-12)
    assert 0 < ours.good < ours.completed  # the SLOs split the requests: goodput is really tested
    for name in ("ttft", "tpot", "itl", "e2el"):
        dist = getattr(cell, f"{name}_ms")
        assert dist.mean == pytest.approx(getattr(theirs, f"mean_{name}_ms"), rel=1e-9), name
        assert dist.std == pytest.approx(getattr(theirs, f"std_{name}_ms"), rel=1e-9, abs=1e-9), name
        assert dist.median == pytest.approx(getattr(theirs, f"median_{name}_ms"), rel=1e-9), name
        for q, value in getattr(theirs, f"percentiles_{name}_ms"):
            assert dist.at(q) == pytest.approx(value, rel=1e-9), (name, q)
