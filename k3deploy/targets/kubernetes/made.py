"""The Namespace a command's lock made, removed again when the command left nothing else in it.

`up` and `apply` create their namespace when it is absent, first thing: the Lease that lets one command at a time
act on a release lives there (targets/kubernetes/lease.py). A command that then ends before anything else was put
there (preflight failed, the apply was refused) removes that Lease and that Namespace again, so a failed first try
leaves nothing behind. Once anything else is in the namespace, whoever made it, both stay (`down --purge` decides
then). Only what carries the release's ownership mark is deleted.
"""

from __future__ import annotations

from k3deploy.errors import K3DeployError
from k3deploy.kobject import KubeObject
from k3deploy.kube.port import KubePort
from k3deploy.profile.object_names import lock_lease_name
from k3deploy.reporter import Reporter
from k3deploy.rollout.contents import named, occupants
from k3deploy.rollout.ownership import owned_by, release_of
from k3deploy.targets.kubernetes.lease import LEASE_API
from k3deploy.targets.kubernetes.listing import namespace_contents


def remove_if_unused(api: KubePort, namespace_obj: KubeObject, reporter: Reporter) -> list[str]:
    """Delete the release's lock Lease and the Namespace `namespace_obj` (the rendered one, which this command
    created) when nothing else is in it; what was deleted (`Kind/name`), empty when it is in use or cannot be read."""
    release, namespace = release_of(namespace_obj)
    lock = lock_lease_name(release)
    try:
        held = occupants(namespace_contents(api, namespace), frozenset({("Lease", lock)}))
    except K3DeployError as exc:
        reporter.note(
            f"  kept Namespace/{namespace}, which this command made: what it holds cannot be listed ({exc.message}); "
            f"`kubectl delete namespace {namespace}` removes it if it is unused"
        )
        return []
    if held:
        return []  # applied objects (or someone's): the namespace is in use
    deleted = []
    for api_version, kind, name, scope in ((LEASE_API, "Lease", lock, namespace), ("v1", "Namespace", namespace, None)):
        live = api.get(api_version, kind, name, scope)
        if live is not None and owned_by(live, release, namespace) and api.delete(api_version, kind, name, scope):
            deleted.append(f"{kind}/{name}")
    if deleted:
        reporter.note(f"  removed {named(deleted)}: this command made them and left nothing in them")
    return deleted
