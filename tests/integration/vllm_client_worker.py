"""`vllm bench serve`'s request function in a process of its own, for the agreement test: one JSON line in per
request on stdin (`{"url", "prompt", "output_len", "model", "at"}`: sent at `time.perf_counter()` == `at`), the
RequestFuncOutput's fields out as one JSON line.

A process of its own so that neither client's event loop, parsing or garbage collection lands in the other's
timestamps: in one shared loop, a pause of one client moves the other's inter-token gaps, and the tails of the two
ITL distributions then measure the clients' interference, not what each makes of the stream.

    python -m tests.integration.vllm_client_worker
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any


async def _one(session: Any, ask: dict[str, Any]) -> dict[str, Any]:
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncInput, async_request_openai_completions

    await asyncio.sleep(max(0.0, ask["at"] - time.perf_counter()))  # one clock with the caller's: CLOCK_MONOTONIC
    out = await async_request_openai_completions(
        RequestFuncInput(
            prompt=ask["prompt"],
            api_url=f"{ask['url']}/v1/completions",
            prompt_len=0,
            output_len=ask["output_len"],
            model=ask["model"],
            ignore_eos=True,
            extra_body={"temperature": 0.0},
        ),
        session,
    )
    fields = ("success", "latency", "ttft", "itl", "output_tokens", "prompt_len", "error", "start_time")
    return {name: getattr(out, name) for name in fields}


async def _serve() -> None:
    import aiohttp

    # vllm bench serve's session for a whole run, kept-alive connections included (vllm/benchmarks/serve.py:
    # benchmark()). Unlike its unmeasured initial test request, the first request here is measured and opens the
    # connection: one pair of the agreement test's 24 carries the connect.
    connector = aiohttp.TCPConnector(
        limit=0, limit_per_host=0, ttl_dns_cache=300, use_dns_cache=True, keepalive_timeout=60,
        enable_cleanup_closed=True, force_close=False, ssl=False,
    )  # fmt: skip
    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    async with aiohttp.ClientSession(connector=connector, trust_env=True, timeout=timeout) as session:
        print(json.dumps({"ready": True}), flush=True)
        while line := await asyncio.to_thread(sys.stdin.readline):
            print(json.dumps(await _one(session, json.loads(line))), flush=True)


def main() -> None:
    """Answer each request line with its output line until stdin closes."""
    import vllm.benchmarks.lib.endpoint_request_func  # noqa: F401  (imported before the first request is timed)

    asyncio.run(_serve())


if __name__ == "__main__":
    main()
