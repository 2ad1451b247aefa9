"""Checks of the weight cache's storage: the StorageClass, whether its provisioner can give ReadWriteMany, the
cache size, and an existing claim's size and access mode. Pure: no I/O.

Every serving pod (4 nodes) mounts the one model-cache PVC, so it must be ReadWriteMany with volumeMode Filesystem.
Kubernetes cannot tell whether a class supports that: a claim the provisioner cannot satisfy stays Pending, and
the sync waits on it. So the provisioner is judged by name against the drivers' documented access modes.
"""

from __future__ import annotations

from k3deploy.preflight.facts import ClusterFacts
from k3deploy.profile.model import Profile
from k3deploy.profile.names import quantity_bytes
from k3deploy.profile.plan import GIB
from k3deploy.report.model import CheckResult, Status, judged

#: Provisioners whose Filesystem volumes support ReadWriteMany (network file systems).
RWX_PROVISIONERS = frozenset(
    {
        "nfs.csi.k8s.io",
        "cephfs.csi.ceph.com",
        "efs.csi.aws.com",
        "fsx.csi.aws.com",
        "filestore.csi.storage.gke.io",
        "file.csi.azure.com",
        "kubernetes.io/azure-file",
        "azurelustre.csi.azure.com",
        "lustre.csi.storage.gke.io",
        "csi.weka.io",
        "csi.vastdata.com",
        "spectrumscale.csi.ibm.com",
        "cluster.local/nfs-subdir-external-provisioner",
        "k8s-sigs.io/nfs-subdir-external-provisioner",
        "gcsfuse.csi.storage.gke.io",
    }
)
#: Provisioners of node-attached block or node-local volumes: ReadWriteOnce only, never shared across nodes.
RWO_PROVISIONERS = frozenset(
    {
        "ebs.csi.aws.com",
        "kubernetes.io/aws-ebs",
        "pd.csi.storage.gke.io",
        "kubernetes.io/gce-pd",
        "disk.csi.azure.com",
        "kubernetes.io/azure-disk",
        "rancher.io/local-path",
        "local.csi.openebs.io",
        "openebs.io/local",
        "topolvm.io",
        "kubernetes.io/no-provisioner",
        "rbd.csi.ceph.com",
        "cinder.csi.openstack.org",
        "lvm.csi.metal-stack.io",
    }
)
RWX = "ReadWriteMany"


def _weights_bytes(profile: Profile) -> int:
    return profile.model.checkpoint_bytes + (profile.speculative.draft_bytes if profile.speculative else 0)


def _class(profile: Profile, facts: ClusterFacts) -> CheckResult:
    wanted = profile.kubernetes.storage_class
    if wanted is not None:
        ok = wanted in facts.storage_classes
        return judged(
            "k8s.storage_class",
            ok,
            wanted if ok else f"{wanted} missing",
            f"StorageClass {wanted}",
            "" if ok else f"available: {', '.join(facts.storage_classes) or 'none'}",
            "set kubernetes.storage_class to an existing class (kubectl get storageclass)",
        )
    ok = facts.default_storage_class is not None
    return judged(
        "k8s.storage_class",
        ok,
        facts.default_storage_class or "no default class",
        "a default StorageClass",
        "" if ok else f"the model-cache PVC names no class; available: {', '.join(facts.storage_classes) or 'none'}",
        "set kubernetes.storage_class=<name>, or mark a class default (storageclass.kubernetes.io/is-default-class)",
    )


def _rwx(profile: Profile, facts: ClusterFacts) -> list[CheckResult]:
    name = profile.kubernetes.storage_class or facts.default_storage_class
    if name is None or name not in facts.storage_provisioners:
        return []  # k8s.storage_class already fails
    provisioner = facts.storage_provisioners[name]
    target = f"{RWX} Filesystem volumes (4 nodes mount the weights)"
    measured = f"{name}: {provisioner}"
    hint = (
        "set kubernetes.storage_class to a shared file system class (NFS, CephFS, EFS, Filestore, Azure Files, "
        "Lustre, ...)"
    )
    if provisioner in RWX_PROVISIONERS:
        return [judged("k8s.storage_rwx", True, measured, target)]
    if provisioner in RWO_PROVISIONERS:
        return [
            judged(
                "k8s.storage_rwx",
                False,
                measured,
                target,
                f"{provisioner} volumes attach to one node (ReadWriteOnce): the model-cache PVC asks {RWX} and "
                "would stay Pending",
                hint,
            )
        ]
    return [
        judged(
            "k8s.storage_rwx",
            False,
            measured,
            target,
            f"cannot tell whether {provisioner} gives {RWX}; if not, the model-cache PVC stays Pending",
            f"check the driver's documented access modes, then {hint}",
            Status.WARN,
        )
    ]


def _size(profile: Profile) -> CheckResult:
    need = _weights_bytes(profile)
    size = quantity_bytes(profile.kubernetes.model_cache_size)
    return judged(
        "k8s.cache_size",
        size >= need,
        profile.kubernetes.model_cache_size,
        f">= {need / GIB:,.0f} GiB (weights + draft)",
        "" if size >= need else f"{size / GIB:,.0f} GiB cannot hold {need / GIB:,.0f} GiB of weights",
        f"set kubernetes.model_cache_size to at least {-(-need // GIB)}Gi (leave headroom for the download)",
    )


def _existing_claim(profile: Profile, facts: ClusterFacts) -> list[CheckResult]:
    claim = facts.model_cache_claim
    if claim is None:
        return []
    need = _weights_bytes(profile)
    target = f"{RWX}, >= {need / GIB:,.0f} GiB"
    recreate = (
        f"an existing claim keeps its access modes and class: delete PVC {claim.name} "
        f"(kubectl delete pvc {claim.name} -n {facts.namespace}; the weights are downloaded again) and re-apply"
    )
    if RWX not in claim.access_modes:
        return [
            judged(
                "k8s.cache_pvc",
                False,
                f"{claim.name}: {', '.join(claim.access_modes) or 'no access modes'}",
                target,
                f"the serving pods on {profile.parallel.nodes} nodes cannot all mount it",
                recreate,
            )
        ]
    capacity = quantity_bytes(claim.capacity) if claim.capacity else 0
    if capacity < need:
        return [
            judged(
                "k8s.cache_pvc",
                False,
                f"{claim.name}: {claim.capacity or 'no size'}",
                target,
                f"{capacity / GIB:,.0f} GiB cannot hold {need / GIB:,.0f} GiB of weights",
                f"expand it (kubectl patch pvc {claim.name} -n {facts.namespace} with a larger "
                "spec.resources.requests.storage, where the class allows expansion), or " + recreate,
            )
        ]
    return [
        judged("k8s.cache_pvc", True, f"{claim.name}: {RWX}, {claim.capacity} ({claim.phase or 'unknown'})", target)
    ]


def storage_checks(profile: Profile, facts: ClusterFacts) -> list[CheckResult]:
    """StorageClass, its ReadWriteMany support, the requested size and any existing model-cache claim."""
    return [_class(profile, facts), *_rwx(profile, facts), _size(profile), *_existing_claim(profile, facts)]
