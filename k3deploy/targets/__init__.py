"""Where a deployment runs: a Kubernetes cluster (LeaderWorkerSet) or a vLLM process on this host.

`REGISTRY` is the one place that maps a profile's `target` to its Target class, named as "module:Class" so
each target module is imported only when chosen (the local target never imports `kubernetes`, and the
other way round). A new target adds one line here. `RENDERERS` names, for a target whose rendering needs none of its
rollout machinery, the function that renders alone, so `k3deploy render` imports only that module (the Kubernetes
target's cluster and rollout imports cost more than its rendering); a target without an entry renders through its class.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from k3deploy.errors import ProfileError
from k3deploy.kube.options import KubeOptions
from k3deploy.smoke.reach import IN_CLUSTER

__all__ = ["IN_CLUSTER", "REGISTRY", "RENDERERS", "DeployOptions", "check_target", "render_for", "target_for"]

if TYPE_CHECKING:  # this package's own import stays standard-library light (targets/local/rehearsal.py runs alone)
    from k3deploy.profile.model import Profile
    from k3deploy.reporter import Reporter
    from k3deploy.targets.base import Target
    from k3deploy.targets.rendering import Rendering

#: Target name -> "module:Class" (imported on first use) or a factory(options, reporter) -> Target.
REGISTRY: dict[str, str | Callable[..., Target]] = {
    "kubernetes": "k3deploy.targets.kubernetes.target:KubernetesTarget",
    "local": "k3deploy.targets.local.target:LocalTarget",
}
#: Target name -> "module:function(profile) -> Rendering": the same rendering as the target's `render`, without
#: importing the target's class (its module loads the cluster client and the rollout).
RENDERERS: dict[str, str] = {
    "kubernetes": "k3deploy.targets.kubernetes.render:render",
}


@dataclass(frozen=True)
class DeployOptions:
    """Command-line options of apply/up/status/down that targets honour (each what applies to it)."""

    kube: KubeOptions = field(default_factory=KubeOptions)
    force_conflicts: bool = False
    dry_run: bool = False
    diff: bool = False
    wait: bool = True
    timeout_s: float | None = None
    endpoint: str | None = None
    #: `up --strategy`: "rolling" (group by group when N >= 2) or "blue-green" (N = 1); targets/kubernetes/upgrade.py, bluegreen.py.
    strategy: str = "rolling"
    #: Smoke each new group by its leader before the next goes (`up` unless --skip-smoke).
    group_smoke: bool = False
    #: URL template of a group leader's endpoint ({pod}, {lws}, {group}, {namespace}); default a port-forward to it.
    group_endpoint: str | None = None
    #: Where `up`'s smoke runs: "client" (from here) or IN_CLUSTER (the rendered smoke Job, targets/kubernetes/in_cluster.py).
    smoke_where: str = "client"


def check_target(profile: Profile) -> Profile:
    """The profile, when its `target` names a registered target; a ProfileError (exit 2) otherwise."""
    if profile.target not in REGISTRY:
        raise ProfileError(
            f"profile {profile.name!r} has an unknown target {profile.target!r}",
            hint=f"set target to one of: {', '.join(sorted(REGISTRY))}",
        )
    return profile


def _named(entry: str) -> Any:
    """The object a "module:attribute" entry names, its module imported now."""
    module, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module), attr)


def _factory(profile: Profile) -> Callable[..., Target]:
    entry = REGISTRY[check_target(profile).target]
    if isinstance(entry, str):
        factory: Callable[..., Target] = _named(entry)
        return factory
    return entry


def target_for(profile: Profile, options: DeployOptions | None = None, reporter: Reporter | None = None) -> Target:
    """The Target for `profile.target`, built with `options` and reporting progress to `reporter`."""
    return _factory(profile)(options or DeployOptions(), reporter)


def render_for(profile: Profile) -> Rendering:
    """What `profile`'s target renders: through its entry in RENDERERS when it has one, else its class's `render`."""
    entry = RENDERERS.get(check_target(profile).target)
    if entry is None:
        return target_for(profile).render(profile)
    render: Callable[[Profile], Rendering] = _named(entry)
    return render(profile)
