"""The LeaderWorkerSet names k3deploy relies on: the labels its controller puts on pods and revisions.

One definition for render/, rollout/, preflight/ and targets/. The keys are the controller's own
(kubernetes-sigs/lws, api/leaderworkerset/v1/leaderworkerset_types.go: SetNameLabelKey, GroupIndexLabelKey,
WorkerIndexLabelKey, GroupUniqueHashLabelKey, TemplateRevisionHashKey).
"""

from __future__ import annotations

#: The LeaderWorkerSet a pod, StatefulSet, Service or ControllerRevision belongs to.
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
#: Which group (replica) of the set a pod belongs to: 0, 1, ...
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
#: A pod's index in its group: 0 is the leader.
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
#: A hash shared by the pods of one group.
GROUP_KEY_LABEL = "leaderworkerset.sigs.k8s.io/group-key"
#: The key of the template a pod or ControllerRevision was made from.
TEMPLATE_REVISION_LABEL = "leaderworkerset.sigs.k8s.io/template-revision-hash"

#: The LeaderWorkerSet API k3deploy renders and reads.
API_VERSION = "leaderworkerset.x-k8s.io/v1"
#: Kinds whose readiness the rollout waits for (targets/kubernetes/wait.py); preflight reviews their list and watch.
WAITED_KINDS = frozenset({"LeaderWorkerSet", "Job"})
#: Read beside a LeaderWorkerSet: its ControllerRevisions prove which template the pods run (rollout/currency.py).
REVISIONS = "ControllerRevision"

#: The name a blue-green upgrade gives the group beside the rendered one (rollout/colours.py).
GREEN_SUFFIX = "-green"


def colours(base: str) -> tuple[str, str]:
    """(blue, green): the rendered LeaderWorkerSet name and the alternate a blue-green upgrade uses."""
    return base, base + GREEN_SUFFIX


#: Longest value of a label (a DNS-1123 label's bound, which the API server applies to label values).
LABEL_VALUE_MAX = 63
#: Characters of the hash the StatefulSet controller appends to a revision's name (ControllerRevision names
#: `<statefulset>-<hash>`, up to 10 characters; kubernetes/kubernetes pkg/controller/history/controller_history.go
#: ControllerRevisionName) and puts in every pod's `controller-revision-hash` label.
REVISION_HASH_MAX = 10


def max_name_length(replicas: int, *, blue_green: bool = False) -> int:
    """The longest LeaderWorkerSet name whose pods the API server accepts.

    LWS names each group's worker StatefulSet `<name>-<group index>`; the StatefulSet controller labels its pods
    `controller-revision-hash: <statefulset>-<hash>`, a label value of at most 63 characters (kubernetes#64023), so
    the name is bounded by 63 - 1 - 10 - len("-<highest group index>"), and a blue-green upgrade's colour takes
    len("-green") more: 50 and 44 for fewer than 11 groups.
    """
    index = len(f"-{max(replicas - 1, 0)}")
    return LABEL_VALUE_MAX - 1 - REVISION_HASH_MAX - index - (len(GREEN_SUFFIX) if blue_green else 0)


def name_length_reason(name: str, replicas: int, *, blue_green: bool = False) -> str | None:
    """Why `name` cannot make pods (None when it can): the derived label that would pass 63 characters."""
    bound = max_name_length(replicas, blue_green=blue_green)
    if len(name) <= bound:
        return None
    colour = GREEN_SUFFIX if blue_green else ""
    return (
        f"{name!r} is {len(name)} characters, above {bound}: the LeaderWorkerSet's worker StatefulSet "
        f"{name}{colour}-{max(replicas - 1, 0)} gives its pods a controller-revision-hash label of its name, '-' and a "
        f"{REVISION_HASH_MAX}-character hash, past the 63 characters a label value may have"
    )


def leader_name(lws_name: str, group: int) -> str:
    """The leader pod of a group (LWS names it `<lws>-<group>`)."""
    return f"{lws_name}-{group}"


def leader_url(lws_name: str, namespace: str, group: int, port: int) -> str:
    """A group's leader under the LWS headless Service (subdomainPolicy Shared: `<lws>-<group>.<lws>`,
    kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go), reachable from inside the cluster: how the
    per-group gates and the canary reach one leader, not the Service that spreads user traffic."""
    return f"http://{lws_name}-{group}.{lws_name}.{namespace}.svc:{port}"
