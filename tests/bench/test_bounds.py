"""bench/bounds.py: rates and lengths a run cannot serve are refused before a prompt is tokenized or sent."""

from __future__ import annotations

import pytest

from k3deploy.bench.bounds import check_lengths, check_rates
from k3deploy.errors import UsageError
from tests.conftest import run_cli

# Port 1 on loopback: nothing listens, so a run that started would exit 3, not 2.
NOWHERE = ("bench", "--endpoint", "http://127.0.0.1:1", "-p", "local-cpu")


@pytest.mark.parametrize(
    ("rates", "n", "duration", "why"),
    [
        ([1e-9], 3, None, "over 3e+09 s, past smoke.overall_timeout_s (900 s)"),
        ([2.0, 0.001], 3, None, "--request-rate 0.001 offers a cell's 3 request(s) over 3e+03 s"),
        ([1e-9], 3, 60.0, "offers 6e-08 requests in --duration 60 s: none to measure"),
        ([1e300], 3, 5.0, "over the 1,000,000 a cell sends"),
    ],
)
def test_a_rate_that_cannot_be_offered_within_the_bound_is_refused(
    rates: list[float], n: int, duration: float | None, why: str
) -> None:
    with pytest.raises(UsageError) as caught:
        check_rates(rates, n, duration, 900.0)
    assert why in caught.value.message and caught.value.exit_code == 2


def test_rates_that_fit_pass() -> None:
    check_rates([0.01, 1.0, float("inf")], 3, None, 900.0)  # 300 s at 0.01 req/s fits 900 s
    check_rates([0.5], 3, 10.0, 900.0)


@pytest.mark.parametrize(
    ("input_len", "output", "ratio", "why"),
    [
        (10_000_000, 128, 0.0, "--random-input-len 10000000 + --random-output-len 128 exceed"),
        (900, 100, 0.1, "up to 991 + 111 with --random-range-ratio 0.1"),
    ],
)
def test_random_lengths_past_the_context_are_refused(input_len: int, output: int, ratio: float, why: str) -> None:
    with pytest.raises(UsageError, match=r"vllm\.max_model_len 1024") as caught:
        check_lengths(1024, output, random_input_len=input_len, range_ratio=ratio)
    assert why in caught.value.message
    check_lengths(1024, 128, random_input_len=896)  # exactly the context


def test_output_tokens_that_leave_no_room_for_a_prompt_are_refused() -> None:
    with pytest.raises(UsageError, match="leaves no room for a prompt"):
        check_lengths(1024, 1024)
    check_lengths(1024, 1023)


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (("--request-rate", "1e-9"), "past smoke.overall_timeout_s"),
        (("--request-rate", "1e-9", "--duration", "5"), "none to measure"),
        (("--dataset", "random", "--random-input-len", "10000000"), "exceed the model's context"),
        (("--output-tokens", "5000"), "leaves no room for a prompt"),
    ],
)
def test_the_cli_refuses_before_the_run(flags: tuple[str, ...], why: str) -> None:
    result = run_cli(*NOWHERE, *flags, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-2].startswith("error: ") and why in lines[-2] and lines[-1].startswith("hint: "), result.stderr
