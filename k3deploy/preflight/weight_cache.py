"""The shared weight cache (the model-cache PVC) against what a model revision needs. Pure.

Every group reads the one ReadWriteMany cache. A new `model.revision` (or draft revision) is downloaded by the
prefetch Job beside the revision still being served, because the running groups keep reading theirs until they
are replaced: for a while the cache holds two snapshots. The Hub cache stores files by content, so files the two
revisions share are stored once; two whole snapshots is the bound the cache must allow.
"""

from __future__ import annotations

from pydantic import BaseModel

from k3deploy.profile.model import Profile
from k3deploy.profile.names import quantity_bytes

#: Snapshots the cache must hold for a revision change without an outage: the one served and the next.
SNAPSHOTS_FOR_UPGRADE = 2


class WeightCache(BaseModel):
    """Bytes of one snapshot (target + draft weights), the cache's size, and how many snapshots fit."""

    snapshot_bytes: int
    cache_bytes: int
    groups: int

    @property
    def snapshots(self) -> int:
        """Whole snapshots the cache holds."""
        return self.cache_bytes // self.snapshot_bytes if self.snapshot_bytes else 0

    @property
    def upgrade_fits(self) -> bool:
        """Whether a new revision can be fetched beside the served one."""
        return self.snapshots >= SNAPSHOTS_FOR_UPGRADE


def weight_cache(profile: Profile) -> WeightCache | None:
    """The cache figures of a kubernetes profile; None for the local target (no shared cache)."""
    if not profile.on_kubernetes:
        return None
    snapshot = profile.model.checkpoint_bytes + (profile.speculative.draft_bytes if profile.speculative else 0)
    return WeightCache(
        snapshot_bytes=snapshot,
        cache_bytes=quantity_bytes(profile.kubernetes.model_cache_size),
        groups=profile.parallel.replicas,
    )


def cache_note(cache: WeightCache) -> str:
    """One sentence for `plan`: shared by every group, and whether a new revision fits beside the served one."""
    gib = 1024**3
    need = SNAPSHOTS_FOR_UPGRADE * cache.snapshot_bytes
    shared = f"shared by the {cache.groups} groups" if cache.groups > 1 else "one cache"
    head = (
        f"{cache.cache_bytes / gib:,.0f} GiB ({shared}); one snapshot (weights + draft) is "
        f"{cache.snapshot_bytes / gib:,.0f} GiB; a new model revision needs room for two: {need / gib:,.0f} GiB"
    )
    if cache.upgrade_fits:
        return head + " - fits"
    return head + f" - does NOT fit: set kubernetes.model_cache_size to at least {-(-need // gib)}Gi"
