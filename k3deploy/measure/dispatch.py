"""Offering one cell's requests under a load model: closed loop (N in flight) or open loop (arrivals at a rate).
Bench's cells and smoke's measured requests and concurrency sweep are all offered here (with the scrapes around
them, k3deploy.measure.window): one measurement loop for both.

Closed loop without --duration sends each prompt of the batch once, `concurrency` at a time; with --duration,
`concurrency` workers each send the next prompt (cycling) until the duration is up. Open loop sends at the arrival
offsets of `k3deploy.measure.arrivals` (vLLM's get_request), gated by --max-concurrency when given; with --duration the
arrivals run until it is up. Requests started before the end always finish, as in vLLM.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from k3deploy.measure import arrivals
from k3deploy.report.bench import LoadModel, Point

T = TypeVar("T")
#: A prompt, as the caller knows it (bench's BenchPrompt, smoke's Prompt): passed through to `send` untouched.
P = TypeVar("P")
#: Sends one prompt: (prompt, index within the cell, scheduled arrival on the run's clock or None) -> its result.
SendOne = Callable[[P, int, float | None], Awaitable[T]]


async def dispatch(
    send: SendOne[P, T],
    batch: Sequence[P],
    point: Point,
    model: LoadModel,
    seed: int,
    clock: Callable[[], float],
) -> tuple[list[T], float]:
    """Run one cell; returns the results in send order and the wall time from the first dispatch to the last end."""
    started = time.perf_counter()
    if point.request_rate is None:
        results = await _closed(send, batch, point.concurrency, model.duration_s)
    else:
        results = await _open(send, batch, point, model, seed, clock, started)
    return results, time.perf_counter() - started


async def _closed(send: SendOne[P, T], batch: Sequence[P], level: int, duration_s: float | None) -> list[T]:
    if duration_s is None:
        gate = asyncio.Semaphore(level)

        async def gated(i: int, prompt: P) -> T:
            async with gate:
                return await send(prompt, i, None)

        return list(await asyncio.gather(*(gated(i, p) for i, p in enumerate(batch))))
    deadline = time.perf_counter() + duration_s
    counter = itertools.count()
    out: list[tuple[int, T]] = []

    async def worker() -> None:
        while time.perf_counter() < deadline:
            i = next(counter)
            out.append((i, await send(batch[i % len(batch)], i, None)))

    await asyncio.gather(*(worker() for _ in range(level)))
    return [r for _, r in sorted(out, key=lambda pair: pair[0])]


async def _open(
    send: SendOne[P, T],
    batch: Sequence[P],
    point: Point,
    model: LoadModel,
    seed: int,
    clock: Callable[[], float],
    started: float,
) -> list[T]:
    rate = point.request_rate or float("inf")
    offsets = (
        arrivals.arrivals_within(model.duration_s, rate, model.burstiness, seed)
        if model.duration_s is not None
        else arrivals.arrival_offsets(len(batch), rate, model.burstiness, seed)
    )
    gate: asyncio.Semaphore | contextlib.nullcontext[None] = (
        asyncio.Semaphore(point.concurrency) if point.concurrency else contextlib.nullcontext()
    )
    shift = clock() - (time.perf_counter() - started)  # run clock at the cell's start

    async def gated(i: int, prompt: P, arrival: float) -> T:
        async with gate:
            return await send(prompt, i, arrival)

    tasks: list[asyncio.Task[T]] = []
    for i, offset in enumerate(offsets):
        # The event loop's timers may fire up to a millisecond early (uvloop's resolution): sleep again until due.
        while (wait := started + offset - time.perf_counter()) > 0:
            await asyncio.sleep(wait)
        tasks.append(asyncio.create_task(gated(i, batch[i % len(batch)], shift + offset)))
    return list(await asyncio.gather(*tasks))
