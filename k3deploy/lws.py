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

#: The name a blue-green upgrade gives the group beside the rendered one (rollout/colours.py).
GREEN_SUFFIX = "-green"


def colours(base: str) -> tuple[str, str]:
    """(blue, green): the rendered LeaderWorkerSet name and the alternate a blue-green upgrade uses."""
    return base, base + GREEN_SUFFIX
