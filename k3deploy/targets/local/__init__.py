"""The local target: a vLLM OpenAI server as a managed background process on this host."""
