"""Preflight: facts about a GPU node and a cluster, and pure checks of those facts against a profile.

`preflight.run.run_preflight` gathers the facts asked for and evaluates them; `preflight.checks.evaluate` is the
pure part. This package itself imports nothing, so importing a pure check module stays light.
"""
