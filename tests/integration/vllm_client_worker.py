"""`vllm bench serve`'s request function in a process of its own, for the agreement test: one JSON line in per
request on stdin (`{"url", "prompt", "output_len", "model"}`), the RequestFuncOutput's fields out as one JSON line.

A process of its own so that neither client's event loop, parsing or garbage collection lands in the other's
timestamps: in one shared loop, a pause of one client moves the other's inter-token gaps, and the tails of the two
ITL distributions then measure the clients' interference, not what each makes of the stream.

    python -m tests.integration.vllm_client_worker
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


async def _one(line: str) -> dict[str, Any]:
    import aiohttp
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncInput, async_request_openai_completions

    ask = json.loads(line)
    # vllm bench serve's session settings (vllm/benchmarks/serve.py: benchmark()).
    async with aiohttp.ClientSession(trust_env=True, timeout=aiohttp.ClientTimeout(total=6 * 60 * 60)) as session:
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


def main() -> None:
    """Answer each request line with its output line until stdin closes."""
    import vllm.benchmarks.lib.endpoint_request_func  # noqa: F401  (imported before the first request is timed)

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        print(json.dumps(asyncio.run(_one(line))), flush=True)


if __name__ == "__main__":
    main()
