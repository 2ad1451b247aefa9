"""What the upgrade tests share (the rolling upgrade and blue-green run on the real plane, tests/realk8s/rollout/):
the API Service's name, the quick `up` flags and the template change they roll out."""

from __future__ import annotations

API_SERVICE = "kimi-k3-gb300-tp16-api"
#: `up` flags both upgrade test files use: no token Secret, a short smoke that judges decode speed only, no preflight.
QUICK_UP = (
    "--set",
    "kubernetes.hf_token_secret=null",
    "--set",
    "smoke.requests=2",
    "--set",
    "smoke.output_tokens=16",
    "--set",
    "smoke.correctness=false",
    "--set",
    "targets.decode_tok_s=1",
    # Greedy and to the full length, as before the GB300 profile sampled like the published run (T=1.0): the
    # rehearsal model's random weights accept almost no draft above T=0.
    "--set",
    "smoke.temperature=0",
    "--set",
    "smoke.ignore_eos=true",
    "--timeout",
    "90s",
    "--skip-preflight",
)
#: The template change both upgrade test files roll out.
NEW_IMAGE = ("--set", "vllm.image=vllm/vllm-openai:kimi-k3-next")
