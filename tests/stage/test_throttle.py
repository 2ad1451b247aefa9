"""The bandwidth cap: waits that keep every copier together under the rate, and no burst after a pause."""

from __future__ import annotations

import pytest

from k3deploy.stage.throttle import Throttle


def test_no_cap_never_waits() -> None:
    assert Throttle(None, 0.0).take(10**12, 0.0) == 0.0


def test_the_first_bytes_already_wait_and_waiting_them_out_pays_for_them() -> None:
    throttle = Throttle(100.0, 0.0)
    assert throttle.take(50, 0.0) == pytest.approx(0.5)
    assert throttle.take(50, 0.5) == pytest.approx(0.5)  # the first wait was spent; these 50 are owed again
    assert throttle.take(100, 1.5) == pytest.approx(0.5)  # half a second idle banked 50


def test_two_copiers_share_one_rate() -> None:
    throttle = Throttle(100.0, 0.0)
    assert throttle.take(100, 0.0) == pytest.approx(1.0)
    assert throttle.take(100, 0.0) == pytest.approx(2.0)


def test_a_long_pause_banks_one_second_at_most() -> None:
    throttle = Throttle(100.0, 0.0)
    assert throttle.take(300, 60.0) == pytest.approx(2.0)


@pytest.mark.parametrize("rate", [0.0, -5.0])
def test_a_cap_must_be_positive(rate: float) -> None:
    with pytest.raises(ValueError):
        Throttle(rate, 0.0)
