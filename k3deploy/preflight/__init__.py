"""Preflight: facts about a GPU node and a cluster, and pure checks of those facts against a profile.

`run_preflight` gathers the facts asked for and evaluates them; `evaluate` is the pure part.
"""

from k3deploy.preflight.run import run_preflight

__all__ = ["run_preflight"]
