"""The retry rules pinned at their bounds (survivors of tests/mutation/run on k3deploy/kube/retry.py): seven
attempts, waits of 0.2 s doubling plus up to 0.2 s of jitter, Retry-After honoured but never past 10 s, a
malformed Retry-After ignored, and the last error itself raised when the attempts are spent.

tenacity sleeps through `time.sleep` (tenacity/nap.py) and draws its jitter from `random.random`: both are
replaced here, so the waits are recorded instead of slept and the jitter is its midpoint (0.1 s)."""

from __future__ import annotations

import random
import time

import pytest
from kubernetes.client.exceptions import ApiException

from k3deploy.kube.retry import MAX_ATTEMPTS, MAX_WAIT_S, call_with_retries, retry_after_s


def _error(status: int, retry_after: object = None) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return exc


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    monkeypatch.setattr(random, "random", lambda: 0.5)
    return slept


def _always(exc: ApiException, calls: list[int]) -> object:
    def fail() -> None:
        calls.append(1)
        raise exc

    return fail


def test_seven_attempts_then_the_last_error_itself(waits: list[float]) -> None:
    calls: list[int] = []
    with pytest.raises(ApiException) as info:  # not tenacity's RetryError
        call_with_retries(_always(_error(503), calls))
    assert info.value.status == 503
    assert MAX_ATTEMPTS == 7 and len(calls) == 7 and len(waits) == 6


def test_waits_double_from_a_fifth_of_a_second_plus_jitter_of_up_to_a_fifth(waits: list[float]) -> None:
    with pytest.raises(ApiException):
        call_with_retries(_always(_error(500), []))
    assert waits == pytest.approx([0.2 * 2**n + 0.1 for n in range(6)])


def test_backoff_is_capped_at_ten_seconds_plus_jitter(waits: list[float]) -> None:
    with pytest.raises(ApiException):
        call_with_retries(_always(_error(500), []), attempts=9)
    assert waits[-2:] == pytest.approx([MAX_WAIT_S + 0.1, MAX_WAIT_S + 0.1]) and MAX_WAIT_S == 10.0
    assert waits[5] == pytest.approx(6.4 + 0.1)


@pytest.mark.parametrize(("hinted", "wait"), [("3", 3.0), ("30", 10.0), ("0", 0.3)])
def test_retry_after_is_honoured_up_to_ten_seconds_and_never_shortens_the_backoff(
    waits: list[float], hinted: str, wait: float
) -> None:
    with pytest.raises(ApiException):
        call_with_retries(_always(_error(429, hinted), []), attempts=2)
    assert waits == pytest.approx([wait])


@pytest.mark.parametrize("value", ["soon", [3], {"s": 1}])
def test_a_retry_after_that_is_not_a_number_is_ignored(value: object) -> None:
    assert retry_after_s(_error(429, value)) is None
