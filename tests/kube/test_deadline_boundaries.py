"""The deadline's rules pinned at their bounds (survivors of tests/mutation/run on k3deploy/kube/deadline.py):
expired exactly at the deadline, requests cut to what is left but never under 0.5 s before it, 10 s of grace
after it (a request's bound then is what is left of the grace), and none once the grace is spent."""

from __future__ import annotations

import pytest

from k3deploy.kube.deadline import GRACE_S, MIN_REQUEST_S, Deadline


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _at(left: float) -> Deadline:
    """A 60 s deadline with `left` seconds of it left (negative: past it)."""
    clock = _Clock()
    deadline = Deadline(60, clock=clock)
    clock.now += 60 - left
    return deadline


@pytest.mark.parametrize(("left", "expired"), [(0.5, False), (0.0, True), (-0.5, True)])
def test_expired_exactly_when_nothing_is_left(left: float, expired: bool) -> None:
    assert _at(left).expired() is expired


def test_a_request_near_the_deadline_gets_half_a_second_not_less() -> None:
    bound = _at(0.2).request_timeout()
    assert MIN_REQUEST_S == 0.5 and bound is not None
    assert (bound.connect, bound.read, bound.cut) == (0.5, 0.5, True)


def test_just_past_the_deadline_a_request_gets_what_is_left_of_the_grace() -> None:
    bound = _at(-0.5).request_timeout()
    assert GRACE_S == 10.0 and bound is not None
    assert (bound.connect, bound.read) == (9.5, 9.5)


@pytest.mark.parametrize(("left", "sent"), [(-9.5, True), (-10.0, False), (-10.5, False)])
def test_no_request_once_the_ten_seconds_of_grace_are_spent(left: float, sent: bool) -> None:
    bound = _at(left).request_timeout()
    assert (bound is not None) is sent
    if bound is not None:
        assert bound.read == pytest.approx(0.5)


@pytest.mark.parametrize(("left", "cut"), [(30.0, False), (29.5, True), (31.0, False)])
def test_a_request_is_cut_by_the_deadline_only_when_less_than_its_read_timeout_is_left(left: float, cut: bool) -> None:
    """The default read timeout is 30 s: with exactly 30 s left the request's own bound still rules (its message
    names 30 s, not the command's deadline)."""
    bound = _at(left).request_timeout()
    assert bound is not None and bound.cut is cut and bound.read == min(30.0, left)


def test_at_the_deadline_itself_a_request_gets_the_whole_grace() -> None:
    bound = _at(0.0).request_timeout()
    assert bound is not None and (bound.connect, bound.read) == (10.0, 10.0)
