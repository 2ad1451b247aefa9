"""Whether a rollback would revert someone else's change: the live LeaderWorkerSet's template must still be the one
this run applied (or the previous revision's, when this run never got to apply it).

Compared through server dry runs, so the webhook's and the API server's defaults are on both sides: the live
`spec.leaderWorkerTemplate` against what applying this run's object (or the previous revision's) would make of it.
"""

from __future__ import annotations

from typing import Any

from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort


def _template(obj: KubeObject) -> Any:
    return (obj.get("spec") or {}).get("leaderWorkerTemplate")


def foreign_change(api: KubePort, applied: list[KubeObject], previous: list[KubeObject]) -> str | None:
    """Why the live LeaderWorkerSet is neither this run's nor the previous revision's; None when it is one of them."""
    lws = next((o for o in applied if o.get("kind") == "LeaderWorkerSet"), None)
    if lws is None:
        return None
    meta = lws["metadata"]
    live = api.get(lws["apiVersion"], lws["kind"], meta["name"], meta.get("namespace"))
    if live is None:
        return None
    mine = api.apply(lws, force=True, dry_run=True)
    if _template(mine) == _template(live):
        return None
    before = next(
        (o for o in previous if o.get("kind") == "LeaderWorkerSet" and o["metadata"]["name"] == meta["name"]), None
    )
    if before is not None and _template(api.apply(before, force=True, dry_run=True)) == _template(live):
        return None
    return (
        f"LeaderWorkerSet/{meta['name']} runs a template neither this run nor the previous revision applied "
        f"(generation {live['metadata'].get('generation')}): someone changed it meanwhile"
    )
