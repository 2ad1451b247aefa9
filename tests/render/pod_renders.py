"""The renders the pod rules run over: every object of each built-in profile's render (through its target's own
rendering; a target that renders no objects gives none), of the scaled-out render (two groups behind an
InferencePool) and of the node-local staging render (its DaemonSet and the serving pods' links)."""

from __future__ import annotations

from typing import Any

from k3deploy.profile import builtin_names, load_profile
from k3deploy.targets import render_for

K3 = "kimi-k3-gb300-tp16"
SCALED = ("parallel.replicas=2", "kubernetes.routing=inference-pool", "kubernetes.gateway_namespace=gateway")
STAGED = ("kubernetes.weight_staging=node-local", "kubernetes.pod_security_level=privileged")
RENDERS: list[tuple[str, tuple[str, ...]]] = [(name, ()) for name in builtin_names()] + [(K3, SCALED), (K3, STAGED)]


def render_id(render: tuple[str, tuple[str, ...]]) -> str:
    """A test id: the profile, then its --set pairs."""
    name, sets = render
    return ",".join([name, *sets])


def rendered(name: str, sets: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every object `k3deploy render -p name --set ...` writes."""
    return render_for(load_profile(name, list(sets))).objects
