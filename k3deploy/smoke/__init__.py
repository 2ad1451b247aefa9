"""Smoke stage: prove a running endpoint is correct, fast enough and really speculating.

The entry points live in `k3deploy.smoke.runner`: `run_smoke(profile, endpoint, options) -> SmokeReport`,
`SmokeOptions` and `exit_code(report)`. This package itself imports nothing, so importing one of its pure
modules (sse, metrics, summary, verdict) does not import an HTTP client.
"""
