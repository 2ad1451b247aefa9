"""The command deadline: each request's (connect, read) timeouts are cut to what is left of it, then to a grace."""

from __future__ import annotations

from k3deploy.kube.deadline import DEFAULT_REQUEST_TIMEOUT, GRACE_S, MIN_REQUEST_S, Deadline, RequestBound


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_without_a_deadline_every_request_still_has_timeouts() -> None:
    deadline = Deadline()
    assert not deadline.bounded and deadline.remaining() is None and not deadline.expired()
    assert deadline.request_timeout() == RequestBound(*DEFAULT_REQUEST_TIMEOUT, cut=False)
    assert deadline.request_timeout((10, 75)) == RequestBound(10.0, 75.0, cut=False)
    assert deadline.request_timeout(5) == RequestBound(5.0, 5.0, cut=False)


def test_requests_are_cut_to_the_deadline_then_to_the_grace_then_refused() -> None:
    clock = Clock()
    deadline = Deadline(20, clock=clock)
    assert deadline.request_timeout() == RequestBound(10.0, 20.0, cut=True)
    assert Deadline(100, clock=clock).request_timeout() == RequestBound(10.0, 30.0, cut=False)
    clock.now += 15
    assert deadline.request_timeout() == RequestBound(5.0, 5.0, cut=True)
    clock.now += 4.9
    assert deadline.request_timeout() == RequestBound(MIN_REQUEST_S, MIN_REQUEST_S, cut=True)
    clock.now += 1.1  # one second past the deadline: the grace is left
    assert deadline.expired()
    bound = deadline.request_timeout()
    assert bound is not None and bound.read == GRACE_S - 1 and bound.cut
    clock.now += GRACE_S
    assert deadline.request_timeout() is None


def test_restart_gives_a_fresh_budget() -> None:
    clock = Clock()
    deadline = Deadline(5, clock=clock)
    clock.now += 60
    assert deadline.request_timeout() is None
    deadline.restart(120)
    assert deadline.remaining() == 120 and deadline.request_timeout() == RequestBound(10.0, 30.0, cut=False)
