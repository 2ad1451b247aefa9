"""The vocabulary of preflight's access review: an `Access` (a verb on a resource), how a kind names its resource, and
the verbs an apply and a wait use. Pure: no I/O.

What a command needs is derived from its rendered set and its plan's steps in rollout/access.py; the cluster probe
(preflight/cluster.py) asks the API server about each with a SelfSubjectAccessReview.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Server-side apply reads the live object, then creates or patches it; rollback and `down` delete it.
APPLY_VERBS = ("get", "create", "patch", "delete")
#: The waiter (targets/kubernetes/streams.py) lists each waited kind, then watches from the list's resourceVersion.
WAIT_VERBS = ("list", "watch")
#: Kinds the set holds that `up` reviews apart: the Namespace is cluster-scoped and its create is asked only when
#: it does not exist yet (preflight/cluster.py); a user's Namespace is left as it is.
REVIEWED_APART = frozenset({"Namespace"})


@dataclass(frozen=True)
class Access:
    """One permission `up` needs: verb on resource.group (namespaced in the profile's namespace unless cluster-wide)."""

    verb: str
    resource: str
    group: str = ""
    namespaced: bool = True
    subresource: str = ""


def plural(kind: str) -> str:
    """The resource name of a kind, as the API server's RESTMapper guesses it (k8s.io/apimachinery
    pkg/api/meta/restmapper.go UnsafeGuessKindToResource): lower case, `-s` -> `-ses`, `-y` -> `-ies`, else `+s`."""
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


def group_of(api_version: str) -> str:
    """The API group of an apiVersion (`batch/v1` -> batch, `v1` -> the core group "")."""
    return api_version.rpartition("/")[0]
