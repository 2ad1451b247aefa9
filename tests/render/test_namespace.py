"""The rendered Namespace: Pod Security Admission labels at the level the set's pods meet (baseline).

Where the cluster's default level is restricted, an unlabelled namespace refuses the root vLLM pods; the Namespace
k3deploy creates says which level it holds the set to (kubernetes/pod-security-admission api/constants.go labels).
"""

from __future__ import annotations

from k3deploy.preflight.checks_psa import namespace_levels
from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.render.pod_security import pod_templates, violations

K3 = "kimi-k3-gb300-tp16"


def test_namespace_enforces_warns_and_audits_baseline() -> None:
    objs = [m.obj for m in build(load_profile(K3))]
    namespace = next(o for o in objs if o["kind"] == "Namespace")
    labels = namespace["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("pod-security.kubernetes.io/")} == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "baseline",
        "pod-security.kubernetes.io/audit": "baseline",
    }
    assert namespace_levels(labels)["enforce"] == "baseline"


def test_every_pod_of_the_set_passes_the_level_its_namespace_enforces() -> None:
    objs = [m.obj for m in build(load_profile(K3))]
    level = next(o for o in objs if o["kind"] == "Namespace")["metadata"]["labels"][
        "pod-security.kubernetes.io/enforce"
    ]
    templates = pod_templates(objs)
    assert templates
    for who, pod, pod_annotations in templates:
        assert violations(level, pod, pod_annotations) == {}, who


def test_gitops_deletes_and_prunes_keep_the_namespace_and_the_weight_cache() -> None:
    """A cascading Argo CD delete or a Flux prune would take ~1.5 TB of weights with the Namespace or the PVC."""
    objs = [m.obj for m in build(load_profile(K3))]
    for kind in ("Namespace", "PersistentVolumeClaim"):
        annotations = next(o for o in objs if o["kind"] == kind)["metadata"]["annotations"]
        assert "Delete=false" in annotations["argocd.argoproj.io/sync-options"].split(","), kind
        assert "Prune=false" in annotations["argocd.argoproj.io/sync-options"].split(","), kind
        assert annotations["kustomize.toolkit.fluxcd.io/prune"] == "disabled", kind
