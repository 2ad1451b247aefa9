"""Waiting for an endpoint to become ready before smoke judges it: GET /health until 200, up to a bound.

An Argo CD PostSync smoke Job (or a `smoke` right after `kubectl apply`) can start while the model is still
loading: the Service has no ready endpoint yet (connection refused or timed out) or vLLM answers 503. Each
poll is bounded by its own timeout and the whole wait by `timeout_s`; progress goes to `notice` (stderr) so a
Job's log shows what it waited for. A wrong API key (401/403) ends the wait at once: waiting will not fix it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from k3deploy.errors import EndpointError

if TYPE_CHECKING:
    from k3deploy.measure.client import SmokeClient

#: First pause between polls and the longest one (the pause doubles while the endpoint is not ready).
FIRST_PAUSE_S = 1.0
MAX_PAUSE_S = 10.0
#: Longest single /health poll: a loading server that accepts but does not answer must not eat the whole wait.
POLL_TIMEOUT_S = 10.0
#: How often a still-waiting line is written.
NOTICE_EVERY_S = 30.0


async def wait_ready(
    client: SmokeClient, timeout_s: float, notice: Callable[[str], None], clock: Callable[[], float] = time.monotonic
) -> str | None:
    """Poll /health until it answers 200 (None) or `timeout_s` passes (why it was not ready, for the report).

    Raises EndpointError for 401/403: the key is wrong and waiting will not change that.
    """
    url = f"{client.shown_url}/health"
    start = clock()
    deadline = start + timeout_s
    pause, last, noticed = FIRST_PAUSE_S, "no answer yet", start
    notice(f"waiting up to {timeout_s:g}s for {url} to answer 200")
    while True:
        left = deadline - clock()
        if left <= 0:
            return f"{url} did not answer 200 within {timeout_s:g}s (smoke.ready_timeout_s); last: {last}"
        try:
            status = await asyncio.wait_for(client.health(), timeout=min(POLL_TIMEOUT_S, left))
        except TimeoutError:
            last = f"no answer within {min(POLL_TIMEOUT_S, left):g}s"
        except EndpointError as exc:
            if exc.kind == "unauthorized":
                raise
            last = exc.message
        else:
            if status == 200:
                notice(f"{url} answered 200 after {clock() - start:.0f}s")
                return None
            last = f"answered {status}"
        now = clock()
        if now - noticed >= NOTICE_EVERY_S:
            notice(f"still waiting for {url} ({now - start:.0f}s of {timeout_s:g}s): {last}")
            noticed = now
        await asyncio.sleep(max(0.0, min(pause, deadline - clock())))
        pause = min(pause * 2, MAX_PAUSE_S)
