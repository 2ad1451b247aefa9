"""`vllm bench serve`'s request function in a process of its own, for the agreement test: one JSON line in per
request on stdin (`{"url", "prompt", "output_len", "model", "at"}`: sent at `time.perf_counter()` == `at`), the
RequestFuncOutput's fields out as one JSON line.

A process of its own so that neither client's event loop, parsing or garbage collection lands in the other's
timestamps: in one shared loop, a pause of one client moves the other's inter-token gaps, and the tails of the two
ITL distributions then measure the clients' interference, not what each makes of the stream.

    python -m tests.integration.vllm_client_worker SERVER_URL MODEL
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

#: The last part of the wait for a send instant, spun rather than slept.
SPIN_S = 0.002


def spin_until(at: float) -> None:
    """Busy-wait until `time.perf_counter()` reaches `at`: the end of a wait that slept until SPIN_S before it."""
    while time.perf_counter() < at:
        pass


async def _one(session: Any, ask: dict[str, Any]) -> dict[str, Any]:
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncInput, async_request_openai_completions

    # One clock with the caller's (CLOCK_MONOTONIC). The loop's timers wake up to a millisecond late, which would
    # reach TTFT, as the splitter holds the earlier of two requests until the later comes: the last 2 ms are spun.
    await asyncio.sleep(max(0.0, ask["at"] - SPIN_S - time.perf_counter()))
    spin_until(ask["at"])
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


async def _serve(server: str, model: str) -> None:
    import aiohttp

    # vllm bench serve's session for a whole run (vllm/benchmarks/serve.py: benchmark()); its kept-alive connections
    # are not reused here, as the agreement test's splitter closes each answer's connection for both clients.
    connector = aiohttp.TCPConnector(
        limit=0, limit_per_host=0, ttl_dns_cache=300, use_dns_cache=True, keepalive_timeout=60,
        enable_cleanup_closed=True, force_close=False, ssl=False,
    )  # fmt: skip
    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    async with aiohttp.ClientSession(connector=connector, trust_env=True, timeout=timeout) as session:
        # Like vllm bench serve's initial test request: one unmeasured request, straight to the server, so that no
        # measured one pays for the client's first use.
        warm = await _one(session, {"url": server, "prompt": "Hello", "output_len": 8, "model": model, "at": 0.0})
        if not warm["success"]:
            raise SystemExit(f"the warm-up request failed: {warm['error']}")
        print(json.dumps({"ready": True}), flush=True)
        while line := await asyncio.to_thread(sys.stdin.readline):
            print(json.dumps(await _one(session, json.loads(line))), flush=True)


def main() -> None:
    """Warm up on the server (argv: URL, model), then answer each request line with its output line until stdin
    closes."""
    import vllm.benchmarks.lib.endpoint_request_func  # noqa: F401  (imported before the first request is timed)

    asyncio.run(_serve(sys.argv[1], sys.argv[2]))


if __name__ == "__main__":
    main()
