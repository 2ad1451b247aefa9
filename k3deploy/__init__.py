"""k3deploy: deploy Kimi K3 + DSpark on GB300 with vLLM, and prove it reached its targets."""

__version__ = "0.1.0"

__all__ = ["__version__"]
