"""The release's prefetch Jobs that the rendered set does not name, for `down` to remove.

A prefetch Job's name ends in a hash of its spec (render/manifests.py prefetch_job_name): new revisions, a new image
or other settings are a new Job, and `down` run with other `--set`s than `up` renders another name. So `down` finds
the release's prefetch Jobs by their labels; its Remove step deletes only those that carry the release's ownership
mark, as for every other object.
"""

from __future__ import annotations

from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.render.manifests import COMPONENT_LABEL, PREFETCH_COMPONENT
from k3deploy.rollout.ownership import INSTANCE_LABEL


def prefetch_selector(release: str) -> str:
    """The label selector of a release's prefetch Jobs."""
    return f"{INSTANCE_LABEL}={release},{COMPONENT_LABEL}={PREFETCH_COMPONENT}"


def stale_prefetch_jobs(api: KubePort, release: str, namespace: str, objects: list[KubeObject]) -> list[KubeObject]:
    """The release's live prefetch Jobs whose names the set `objects` does not hold (as the Remove step takes them)."""
    named = {o["metadata"]["name"] for o in objects if o.get("kind") == "Job"}
    jobs, _ = api.list("batch/v1", "Job", namespace, label_selector=prefetch_selector(release))
    return [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": job["metadata"]["name"],
                "namespace": namespace,
                "labels": {INSTANCE_LABEL: release, COMPONENT_LABEL: PREFETCH_COMPONENT},
            },
        }
        for job in jobs
        if job["metadata"]["name"] not in named
    ]
