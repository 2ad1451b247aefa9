"""Would the target namespace's Pod Security Admission admit the rendered set? Pure: no I/O.

Pod Security Admission reads its levels from the namespace's labels (kubernetes/pod-security-admission
api/helpers.go PolicyToEvaluate): `pod-security.kubernetes.io/enforce` rejects a pod that breaks its level,
`warn` admits it with a warning, `audit` only records it. An unparsable enforce or warn level counts as
restricted; an unlabelled namespace gets the API server's default (privileged unless its AdmissionConfiguration
sets another), which preflight cannot read. The pods are judged with the same rule functions the tests hold
the set to (k3deploy.render.pod_security), at version "latest".
"""

from __future__ import annotations

from collections.abc import Sequence

from k3deploy.kobject import KubeObject
from k3deploy.preflight.facts import ClusterFacts
from k3deploy.render.pod_security import LEVELS, pod_templates, violations
from k3deploy.report.model import CheckResult, Status

LABEL_PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "warn", "audit")
_SHOWN = 4


def namespace_levels(labels: dict[str, str]) -> dict[str, str]:
    """Mode -> level the namespace's labels set (unparsable enforce/warn levels read as restricted, audit as privileged)."""
    levels = {}
    for mode in MODES:
        value = labels.get(LABEL_PREFIX + mode)
        if value is None:
            continue
        levels[mode] = value if value in LEVELS else ("privileged" if mode == "audit" else "restricted")
    return levels


def set_violations(objects: Sequence[KubeObject], level: str) -> list[str]:
    """`pod: rule (what)` for every pod of the rendered set that `level` would not admit."""
    found = []
    for where, pod, pod_annotations in pod_templates(list(objects)):
        for rule, problems in violations(level, pod, pod_annotations).items():
            found.append(f"{where}: {rule} ({'; '.join(problems[:2])})")
    return found


def rendered_level(objects: Sequence[KubeObject]) -> str:
    """The enforce level the set's own Namespace carries (kubernetes.pod_security_level; baseline if none)."""
    for obj in objects:
        if obj.get("kind") == "Namespace":
            return str(((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_PREFIX + "enforce", "baseline"))
    return "baseline"


def label_command(namespace: str, level: str) -> str:
    """The `kubectl label` command that gives a Namespace the set's Pod Security labels."""
    labels = " ".join(f"{LABEL_PREFIX}{mode}={level}" for mode in MODES)
    return f"kubectl label namespace {namespace} --overwrite {labels}"


def _raise_hint(ns: str, mode: str, wanted: str) -> str:
    if wanted != "baseline":
        # kubernetes.pod_security_level privileged: a hostPath (weight_staging node-local) or a patch needs it.
        return f"the set needs {wanted} (kubernetes.pod_security_level): {label_command(ns, wanted)}"
    return (
        f"label the namespace for baseline (kubectl label namespace {ns} --overwrite {LABEL_PREFIX}{mode}=baseline), "
        "or name a non-root vLLM image in vllm.image with a pod securityContext patch"
    )


def pod_security_check(facts: ClusterFacts, objects: Sequence[KubeObject]) -> CheckResult:
    """k8s.pod_security: FAIL when the enforce level would reject a pod of the set, WARN when only warn would object."""
    name, ns = "k8s.pod_security", facts.namespace
    levels = namespace_levels(facts.namespace_labels if facts.namespace_exists else {})
    measured = ", ".join(f"{mode}={level}" for mode, level in levels.items()) or "no Pod Security labels"
    target = "a level that admits the set (baseline: the serving pods run as root)"
    default = "the API server's default level applies (privileged unless its AdmissionConfiguration sets one)"
    if facts.namespace_exists and "enforce" not in levels:
        # A Namespace made beforehand is never applied over (rollout/ownership.py): the labels k3deploy renders
        # on its own Namespace never reach it, and a cluster defaulting to restricted rejects the serving pods.
        return CheckResult(
            name=name,
            status=Status.WARN,
            measured=measured,
            target=target,
            detail=f"namespace {ns} was made beforehand without {LABEL_PREFIX}enforce: {default}, and a cluster "
            "defaulting to restricted rejects the serving pods (they run as root)",
            hint=label_command(ns, rendered_level(objects)),
        )
    if "enforce" not in levels and "warn" not in levels:
        return CheckResult(
            name=name,
            status=Status.PASS,
            measured=measured,
            target=target,
            detail=f"namespace {ns} (to be created by `up`, with the set's Pod Security labels)",
        )
    for mode, status in (("enforce", Status.FAIL), ("warn", Status.WARN)):
        level = levels.get(mode)
        found = set_violations(objects, level) if level else []
        if found:
            more = f" and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
            verb = "rejects" if mode == "enforce" else "warns about"
            return CheckResult(
                name=name,
                status=status,
                measured=measured,
                target=target,
                detail=f"{mode}={level} {verb} {len(found)} pod rule(s): {'; '.join(found[:_SHOWN])}{more}",
                hint=_raise_hint(ns, mode, rendered_level(objects)),
            )
    return CheckResult(
        name=name,
        status=Status.PASS,
        measured=measured,
        target=target,
        detail="every pod of the set meets the namespace's levels",
    )
