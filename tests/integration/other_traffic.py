"""Other users' traffic on a real vLLM server while a test runs: a few threads sending bounded completions.

It stands for what reaches a leader that already serves users during its gate (issue 46): requests the smoke did not
send, whose tokens and speculative steps land in the same server-wide /metrics counters.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx

#: Each request's time limit, and how many one worker sends at most: the load ends with its block, or at this bound.
REQUEST_TIMEOUT_S = 120.0
MAX_REQUESTS_PER_WORKER = 200
#: How long the block waits for the first answer (the load is under way) before it gives up.
FIRST_ANSWER_TIMEOUT_S = 120.0


@dataclass
class Traffic:
    """What the other traffic got: completion tokens answered, and the errors (each request's first line)."""

    tokens: int = 0
    answered: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    first: threading.Event = field(default_factory=threading.Event)


def _worker(base_url: str, model: str, max_tokens: int, stop: threading.Event, traffic: Traffic) -> None:
    body = {"model": model, "prompt": "other users ask", "max_tokens": max_tokens, "ignore_eos": True}
    with httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT_S) as client:
        for _ in range(MAX_REQUESTS_PER_WORKER):
            if stop.is_set():
                return
            try:
                answer = client.post("/v1/completions", json={**body, "temperature": 0})
                answer.raise_for_status()
                tokens = int(answer.json()["usage"]["completion_tokens"])
            except (httpx.HTTPError, KeyError, ValueError) as exc:
                with traffic.lock:
                    traffic.errors.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                traffic.first.set()  # the block need not wait out its timeout to learn the load failed
                return
            with traffic.lock:
                traffic.tokens += tokens
                traffic.answered += 1
            traffic.first.set()


@contextlib.contextmanager
def other_traffic(base_url: str, model: str, *, workers: int = 2, max_tokens: int = 48) -> Iterator[Traffic]:
    """Keep `workers` requests of `max_tokens` tokens in flight on `base_url` from the first answer until the block
    ends (the block starts once one came back, so the load is running), then wait for the last ones."""
    stop, traffic = threading.Event(), Traffic()
    threads = [
        threading.Thread(target=_worker, args=(base_url, model, max_tokens, stop, traffic), daemon=True)
        for _ in range(workers)
    ]
    for thread in threads:
        thread.start()
    try:
        if not traffic.first.wait(FIRST_ANSWER_TIMEOUT_S) or not traffic.answered:
            raise RuntimeError(f"the other traffic got no answer in {FIRST_ANSWER_TIMEOUT_S:.0f} s: {traffic.errors}")
        yield traffic
    finally:
        stop.set()
        for thread in threads:
            thread.join(REQUEST_TIMEOUT_S)
