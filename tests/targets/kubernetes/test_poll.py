"""targets/kubernetes/poll.py: the one deadline loop, driven by a scripted clock (no real sleeping)."""

from __future__ import annotations

from k3deploy.targets.kubernetes.poll import poll


def test_poll_returns_the_first_answer_and_sleeps_between_asks() -> None:
    answers = iter([None, None, "ready"])
    slept: list[float] = []
    assert poll(lambda: next(answers), lambda: 100.0, 2.0, sleep=slept.append) == "ready"
    assert slept == [2.0, 2.0]


def test_poll_sleeps_no_longer_than_what_is_left_and_gives_up_at_the_deadline() -> None:
    left = iter([5.0, 1.5, 0.0])
    slept: list[float] = []
    asked: list[int] = []
    assert poll(lambda: asked.append(1), lambda: next(left), 2.0, sleep=slept.append) is None
    assert slept == [2.0, 1.5]
    assert len(asked) == 3  # asked once more after the last sleep, then the time is up


def test_poll_asks_once_even_with_no_time_left_and_waits_forever_without_a_deadline() -> None:
    assert poll(lambda: "done", lambda: -1.0, 2.0, sleep=lambda s: None) == "done"
    assert poll(lambda: None, lambda: -1.0, 2.0, sleep=lambda s: None) is None
    answers = iter([None] * 50 + [7])
    slept: list[float] = []
    assert poll(lambda: next(answers), lambda: None, 0.5, sleep=slept.append) == 7
    assert slept == [0.5] * 50


def test_an_answer_that_is_falsy_but_not_none_ends_the_wait() -> None:
    assert poll(lambda: 0, lambda: 0.0, 1.0, sleep=lambda s: None) == 0
    assert poll(lambda: [], lambda: 0.0, 1.0, sleep=lambda s: None) == []
