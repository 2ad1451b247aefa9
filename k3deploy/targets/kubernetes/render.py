"""The Kubernetes target's rendering: the manifests, one file per object in apply order, plus kustomization.yaml.

Pure (the set from render/manifests.py, serialised lazily) and apart from targets/kubernetes/target.py, whose cluster and
rollout imports `k3deploy render` never needs: the CLI reaches it through `targets.render_for`.
"""

from __future__ import annotations

from k3deploy.profile.model import Profile
from k3deploy.render.manifests import build
from k3deploy.render.write import files_of, objects_summary, stream_of
from k3deploy.targets.rendering import Rendering

__all__ = ["render"]


def render(profile: Profile) -> Rendering:
    """The manifests, one file per object in apply order, plus kustomization.yaml."""
    manifests = build(profile)
    return Rendering(
        files=lambda: files_of(manifests),
        stream=lambda: stream_of(manifests),
        what=objects_summary(len(manifests)),
        summary=f"{len(manifests)} objects rendered",
        objects=[manifest.obj for manifest in manifests],
    )
