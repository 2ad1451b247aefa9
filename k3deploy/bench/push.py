"""`bench --push`: a run's canary series (observe/canary_series.py) pushed to a Prometheus Pushgateway with
prometheus_client's push support.

The push adds (POST, `pushadd_to_gateway`): series of this run replace the same-named ones of the group, and the
success stamp of an earlier run stays when this run failed. A gateway that cannot be reached or refuses the push is
an EnvironmentProblem (exit 3), after the report has been written.
"""

from __future__ import annotations

import urllib.error

from prometheus_client import CollectorRegistry, Gauge, pushadd_to_gateway

from k3deploy.errors import EnvironmentProblem, UsageError
from k3deploy.observe.canary_series import HELP, JOB, Sample
from k3deploy.profile.model import Profile
from k3deploy.redact import redact_url

#: Seconds one push may take.
PUSH_TIMEOUT_S = 30.0
#: The `--push` value that takes the URL from the profile.
FROM_PROFILE = "profile"


def gateway_url(value: str, profile: Profile) -> str:
    """The Pushgateway URL of `--push VALUE`: the value, or `profile` for observe.pushgateway_url."""
    if value != FROM_PROFILE:
        if not value.startswith(("http://", "https://")):
            raise UsageError(
                f"--push {value!r} is not an http(s) URL", hint="--push http://pushgateway:9091, or --push profile"
            )
        return value
    url = profile.observe.pushgateway_url
    if url is None:
        raise UsageError(
            f"--push profile: profile {profile.name!r} sets no observe.pushgateway_url",
            hint="--push http://pushgateway:9091, or --set observe.pushgateway_url=http://pushgateway:9091",
        )
    return str(url)


def registry_of(samples: list[Sample]) -> CollectorRegistry:
    """A registry holding one gauge per series name, each sample a child by its labels."""
    registry = CollectorRegistry()
    gauges: dict[str, Gauge] = {}
    for sample in samples:
        names = tuple(k for k, _ in sample.labels)
        gauge = gauges.get(sample.name)
        if gauge is None:
            gauge = gauges[sample.name] = Gauge(sample.name, HELP[sample.name], names, registry=registry)
        (gauge.labels(*(v for _, v in sample.labels)) if names else gauge).set(sample.value)
    return registry


def push(url: str, samples: list[Sample], grouping_key: dict[str, str]) -> None:
    """Push the samples to the gateway's group `job=k3deploy-canary` + `grouping_key`."""
    try:
        pushadd_to_gateway(url, JOB, registry_of(samples), grouping_key=grouping_key, timeout=PUSH_TIMEOUT_S)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise EnvironmentProblem(
            f"push to the Pushgateway {redact_url(url)} failed: {reason}",
            hint="check the URL and that the gateway answers (curl URL/-/healthy); the report was written",
        ) from None
