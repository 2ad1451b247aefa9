"""The ResourceClaim controller of kube-controller-manager: a pod's template claims become ResourceClaims.

Imitates kubernetes pkg/controller/resourceclaim/controller.go (syncPod, handleClaim): for each
`spec.resourceClaims[]` entry naming a `resourceClaimTemplateName`, a ResourceClaim `<pod>-<claim>-<suffix>` owned by
the pod is made from the template and recorded in the pod's `status.resourceClaimStatuses`; when the template does not
exist, a Warning event `FailedResourceClaimCreation` on the pod says so ("PodResourceClaim <claim>: resource claim
template "<t>": resourceclaimtemplate.resource.k8s.io "<t>" not found") and the pod is retried later. Until its
claim exists the scheduler's DynamicResources PreEnqueue keeps the pod out of scheduling without writing a
condition (pkg/scheduler/framework/plugins/dynamicresources; k8s.io/dynamic-resource-allocation/resourceclaim:
`pod "<ns>/<name>": ResourceClaim not created yet`).
"""

from __future__ import annotations

import copy
import uuid

from tests.kubeapi.controllers.base import Controller
from tests.kubeapi.controllers.events import record
from tests.kubeapi.errors import ApiError

TEMPLATES = ("resource.k8s.io", "resourceclaimtemplates")


def waiting_for_claim(pod: dict) -> str | None:
    """The DynamicResources PreEnqueue verdict: why the pod cannot be scheduled yet, or None."""
    created = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    for claim in (pod.get("spec") or {}).get("resourceClaims") or []:
        if claim.get("resourceClaimTemplateName") and claim.get("name") not in created:
            meta = pod["metadata"]
            return f'pod "{meta.get("namespace", "")}/{meta["name"]}": ResourceClaim not created yet'
    return None


class ResourceClaimController(Controller):
    """Creates the ResourceClaims of pods' template claims."""

    name = "resource-claim-controller"

    def reconcile(self) -> None:
        """One pass over the pods waiting for a claim."""
        if self.store.registry.by_key(TEMPLATES) is None:
            return
        for pod in self.store.list("pods"):
            if pod["metadata"].get("deletionTimestamp") or waiting_for_claim(pod) is None:
                continue
            self._sync(pod)

    def _sync(self, pod: dict) -> None:
        meta = pod["metadata"]
        ns = meta["namespace"]
        created = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
        statuses = []
        for claim in pod["spec"].get("resourceClaims") or []:
            template_name = claim.get("resourceClaimTemplateName")
            if not template_name or claim["name"] in created:
                continue
            template = self.store.get("resourceclaimtemplates", template_name, ns)
            if template is None:
                record(
                    self.store,
                    pod,
                    "Warning",
                    "FailedResourceClaimCreation",
                    f'PodResourceClaim {claim["name"]}: resource claim template "{template_name}": '
                    f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found',
                    self.name,
                )
                return
            name = f"{meta['name']}-{claim['name']}-{uuid.uuid4().hex[:5]}"
            try:
                self.store.create(
                    "resourceclaims",
                    {
                        "metadata": {
                            "name": name,
                            "namespace": ns,
                            "annotations": {"resource.kubernetes.io/pod-claim-name": claim["name"]},
                            "ownerReferences": [
                                {
                                    "apiVersion": "v1",
                                    "kind": "Pod",
                                    "name": meta["name"],
                                    "uid": meta["uid"],
                                    "controller": True,
                                    "blockOwnerDeletion": True,
                                }
                            ],
                        },
                        "spec": copy.deepcopy((template.get("spec") or {}).get("spec") or {}),
                    },
                    ns,
                    manager=self.name,
                )
            except ApiError:
                return
            statuses.append({"name": claim["name"], "resourceClaimName": name})
        if statuses:

            def write(obj: dict) -> None:
                obj.setdefault("status", {}).setdefault("resourceClaimStatuses", []).extend(statuses)

            self.store.update("pods", meta["name"], ns, write, subresource="status", manager=self.name)
