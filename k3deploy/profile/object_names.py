"""Names of the objects a profile's deployment owns, derived from the profile alone (pure).

Here rather than in render/ so that readers of a deployment (observe/, preflight/) need not import the renderer.
"""

from __future__ import annotations

from k3deploy.profile.model import Profile


def api_service_name(profile: Profile) -> str:
    """Name of the Service in front of the leader's HTTP port.

    Not the LeaderWorkerSet's own name: LWS creates a headless Service of that name for the pods' DNS
    (`LWS_LEADER_ADDRESS`), and would silently skip it if ours took the name.
    """
    return f"{profile.name}-api"


def model_cache_name(profile: Profile) -> str:
    """Name of the weight-cache PersistentVolumeClaim."""
    return f"{profile.name}-model-cache"


def lock_lease_name(release: str) -> str:
    """Name of a release's command lock Lease (targets/kubernetes/lease.py)."""
    return f"{release}-k3deploy-lock"


def guard_lease_name(release: str) -> str:
    """Name of the Lease the guards of a release elect their leader on (targets/kubernetes/election.py)."""
    return f"{release}-k3deploy-guard"


def smoke_job_name(profile: Profile) -> str:
    """Name of the release's smoke Job (its PostSync hook under GitOps)."""
    return f"{profile.name}-smoke"


def compute_domain_name(profile: Profile) -> str:
    """Name of the ComputeDomain the groups' IMEX channels come from."""
    return f"{profile.name}-compute-domain"
