"""The Kueue names k3deploy relies on (sigs.k8s.io/kueue v0.17), one definition for render/, preflight/, rollout/ and
targets/, as lws.py is for the LeaderWorkerSet's.

Sources: apis/kueue/v1beta2/topology_types.go (PodSetRequiredTopologyAnnotation, PodSetGroupName,
TopologySchedulingGate), pkg/controller/constants/constants.go (QueueLabel, JobOwnerNameAnnotation,
ComponentWorkloadIndexAnnotation), pkg/controller/jobs/pod/constants/constants.go (SchedulingGateName,
SuspendedByParentAnnotation).
"""

from __future__ import annotations

#: The label that queues a workload (here the LeaderWorkerSet) to a LocalQueue.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: On a pod template: every pod of the podset in one domain of this topology level (the NVLink clique label).
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
#: On both templates: the leader's and the workers' podsets placed together, in one domain.
PODSET_GROUP = "kueue.x-k8s.io/podset-group-name"
#: The API and kind of the Workload Kueue makes per group.
API_VERSION = "kueue.x-k8s.io/v1beta2"
WORKLOAD_KIND = "Workload"
#: The annotations Kueue's LeaderWorkerSet integration sets on each group's Workload.
OWNER_NAME = "kueue.x-k8s.io/job-owner-name"
GROUP_INDEX = "kueue.x-k8s.io/component-workload-index"
#: The scheduling gates Kueue puts on the pods it holds: until admission, and until its topology assignment.
GATES = frozenset({"kueue.x-k8s.io/admission", "kueue.x-k8s.io/topology"})
#: What Kueue's LeaderWorkerSet webhook sets on the templates of a LeaderWorkerSet it will admit.
SUSPENDED_BY_PARENT = "kueue.x-k8s.io/pod-suspending-parent"
#: The LocalQueue the Kueue guide (docs/guide/kueue.md) tells an operator to create, and k3deploy's default kubernetes.kueue_queue.
DEFAULT_LOCAL_QUEUE = "k3deploy"
