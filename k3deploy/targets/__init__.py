"""Where a deployment runs: a Kubernetes cluster (LeaderWorkerSet) or a vLLM process on this host.

`target_for(profile, options)` is the one place that maps a profile to its Target; each target module is
imported only when chosen, so the local target never imports `kubernetes` and the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from k3deploy.kube.client import KubeOptions

if TYPE_CHECKING:
    from k3deploy.profile.model import Profile
    from k3deploy.targets.base import Target


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


def target_for(profile: Profile, options: DeployOptions | None = None, view: Any = None) -> Target:
    """The Target for `profile.target`, built with `options` and reporting progress to `view`."""
    options = options or DeployOptions()
    if profile.target == "local":
        from k3deploy.targets.local import LocalTarget

        return LocalTarget(options, view)
    from k3deploy.targets.kubernetes import KubernetesTarget

    return KubernetesTarget(options, view)
