"""Argo CD's sync order over a rendered set, and what each object needs to exist before it is created.

The order imitates argoproj/gitops-engine:
- pkg/sync/sync_tasks.go: tasks sort by phase (PreSync -1, Sync 0, PostSync 1, SyncFail 2), then sync wave
  (annotation `argocd.argoproj.io/sync-wave`, default 0), then `kindOrder` (Helm's kind sorter; a kind not in the
  list, e.g. any custom resource, ranks last), then name. `Sort` then moves a Namespace of the set in front of the
  first object in it, taking that object's phase and wave (`adjustDeps`).
- pkg/sync/sync_context.go `Sync`: one (phase, wave) step runs at a time; the next starts only when every task of
  the step is done (hooks completed, resources healthy). `runTasks` applies a step's tasks in sorted order, one kind
  at a time (it waits between consecutive tasks of different kinds), so within a step an object of an earlier kind
  exists before a later kind is applied; objects of the same kind go in parallel.
- pkg/health/health_pvc.go: a Pending PersistentVolumeClaim is Progressing, so a step holding a PVC waits until it
  is Bound; with a WaitForFirstConsumer StorageClass that happens only once a pod uses it.
A hook is an object with `argocd.argoproj.io/hook` (its first phase is the one it runs in; `Skip` is never applied).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HOOK = "argocd.argoproj.io/hook"
WAVE = "argocd.argoproj.io/sync-wave"
PHASE_ORDER = {"PreSync": -1, "Sync": 0, "PostSync": 1, "SyncFail": 2}
#: gitops-engine pkg/sync/sync_tasks.go `kindOrder` (kinds absent from it rank 0, after all of these).
_KINDS = (
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
)
KIND_ORDER = {kind: index - len(_KINDS) for index, kind in enumerate(_KINDS)}
#: The ServiceAccount every namespace gets from the ServiceAccount controller (it comes with the Namespace).
DEFAULT_SERVICE_ACCOUNT = "default"

Ref = tuple[str, str]  # (kind, name) in the set's namespace, or ("Namespace", name)


@dataclass(frozen=True)
class Task:
    """One object as Argo CD schedules it."""

    obj: dict[str, Any]
    phase: str
    wave: int

    @property
    def kind(self) -> str:
        """The object's kind."""
        return str(self.obj["kind"])

    @property
    def ref(self) -> Ref:
        """(kind, name) of the object."""
        return self.kind, str(self.obj["metadata"]["name"])

    def sort_key(self) -> tuple[int, int, int, str]:
        """sync_tasks.go `Less`: phase, wave, kind, name."""
        return PHASE_ORDER[self.phase], self.wave, KIND_ORDER.get(self.kind, 0), self.ref[1]


def _task(obj: dict[str, Any]) -> Task | None:
    annotations = obj.get("metadata", {}).get("annotations") or {}
    hook = annotations.get(HOOK)
    phase = "Sync"
    if hook is not None:
        phases = [p.strip() for p in hook.split(",")]
        if "Skip" in phases:
            return None
        phase = phases[0]
        if phase not in PHASE_ORDER:
            raise ValueError(f"{obj['kind']}/{obj['metadata']['name']}: hook {hook!r} is not a sync phase")
    return Task(obj, phase, int(annotations.get(WAVE, "0")))


def schedule(objects: list[dict[str, Any]]) -> list[Task]:
    """The set in Argo CD's order, with the Namespace moved in front of the first object in it (adjustDeps)."""
    tasks = sorted((t for t in map(_task, objects) if t is not None), key=Task.sort_key)
    out: list[Task] = []
    for task in tasks:
        if task.kind != "Namespace":
            out.append(task)
            continue
        first = next((i for i, t in enumerate(out) if t.obj["metadata"].get("namespace") == task.ref[1]), None)
        if first is None:
            out.append(task)
        else:
            out.insert(first, Task(task.obj, out[first].phase, out[first].wave))
    return out


def positions(tasks: list[Task]) -> dict[Ref, tuple[int, int]]:
    """(step, kind group) of every object: steps are (phase, wave) runs; kind groups are applied one after another."""
    out: dict[Ref, tuple[int, int]] = {}
    step = group = -1
    previous: Task | None = None
    for task in tasks:
        if previous is None or (task.phase, task.wave) != (previous.phase, previous.wave):
            step, group = step + 1, 0
        elif task.kind != previous.kind:
            group += 1
        out[task.ref] = (step, group)
        previous = task
    return out


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec") or {}
    if obj["kind"] == "Pod":
        return [spec]
    if obj["kind"] == "LeaderWorkerSet":
        template = spec.get("leaderWorkerTemplate") or {}
        return [t["spec"] for t in (template.get("leaderTemplate"), template.get("workerTemplate")) if t]
    if "template" in spec and isinstance(spec["template"], dict) and "spec" in spec["template"]:
        return [spec["template"]["spec"]]  # Job, Deployment, StatefulSet, DaemonSet, ...
    return []


def _container_refs(container: dict[str, Any]) -> set[Ref]:
    refs: set[Ref] = set()
    for env in container.get("env") or []:
        source = env.get("valueFrom") or {}
        for key, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
            ref = source.get(key)
            if ref and not ref.get("optional"):
                refs.add((kind, ref["name"]))
    for source in container.get("envFrom") or []:
        for key, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
            ref = source.get(key)
            if ref and not ref.get("optional"):
                refs.add((kind, ref["name"]))
    return refs


def _volume_refs(volume: dict[str, Any]) -> set[Ref]:
    refs: set[Ref] = set()
    if "persistentVolumeClaim" in volume:
        refs.add(("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]))
    if "configMap" in volume and not volume["configMap"].get("optional"):
        refs.add(("ConfigMap", volume["configMap"]["name"]))
    if "secret" in volume and not volume["secret"].get("optional"):
        refs.add(("Secret", volume["secret"]["secretName"]))
    for source in (volume.get("projected") or {}).get("sources") or []:
        for key, kind in (("configMap", "ConfigMap"), ("secret", "Secret")):
            ref = source.get(key)
            if ref and not ref.get("optional"):
                refs.add((kind, ref["name"]))
    return refs


def needs(obj: dict[str, Any]) -> set[Ref]:
    """What must exist when `obj` (or the pods its controller creates at once) is created."""
    namespace = obj.get("metadata", {}).get("namespace")
    refs: set[Ref] = {("Namespace", namespace)} if namespace else set()
    for pod in _pod_specs(obj):
        account = pod.get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT
        if account != DEFAULT_SERVICE_ACCOUNT:
            refs.add(("ServiceAccount", account))
        for secret in pod.get("imagePullSecrets") or []:
            refs.add(("Secret", secret["name"]))
        for volume in pod.get("volumes") or []:
            refs |= _volume_refs(volume)
        for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
            refs |= _container_refs(container)
        for claim in pod.get("resourceClaims") or []:
            if claim.get("resourceClaimTemplateName"):
                refs.add(("ResourceClaimTemplate", claim["resourceClaimTemplateName"]))
            if claim.get("resourceClaimName"):
                refs.add(("ResourceClaim", claim["resourceClaimName"]))
    return refs


def provides(obj: dict[str, Any]) -> set[Ref]:
    """What exists once `obj` is created: itself, and what its controller makes at once (a ComputeDomain's channel
    ResourceClaimTemplate, resource.nvidia.com/v1beta1 spec.channel.resourceClaimTemplate.name)."""
    out: set[Ref] = {(obj["kind"], obj["metadata"]["name"])}
    if obj["kind"] == "ComputeDomain":
        out.add(("ResourceClaimTemplate", obj["spec"]["channel"]["resourceClaimTemplate"]["name"]))
    return out


@dataclass(frozen=True)
class Problem:
    """An object whose need is not met at the time Argo CD creates it."""

    needer: Ref
    need: Ref
    why: str

    def __str__(self) -> str:
        return f"{self.needer[0]}/{self.needer[1]} needs {self.need[0]}/{self.need[1]}: {self.why}"


def check(objects: list[dict[str, Any]], external: set[Ref] = frozenset()) -> list[Problem]:
    """Every need of every object that is not created before it (or provided outside the set: `external`), and
    every PVC that sits in an earlier step than its first consumer (Argo CD would wait for it to bind)."""
    tasks = schedule(objects)
    where = positions(tasks)
    provider: dict[Ref, tuple[int, int]] = {}
    for task in tasks:
        for ref in provides(task.obj):
            provider.setdefault(ref, where[task.ref])
    problems: list[Problem] = []
    first_use: dict[Ref, int] = {}
    for task in tasks:
        at = where[task.ref]
        for need in sorted(needs(task.obj)):
            if need[0] == "PersistentVolumeClaim":
                first_use.setdefault(need, at[0])
            if need in provider:
                if provider[need] >= at:
                    problems.append(Problem(task.ref, need, f"created at step/kind {provider[need]}, not before {at}"))
            elif need not in external:
                problems.append(Problem(task.ref, need, "not in the set and not provided outside it"))
    for task in tasks:
        if task.kind == "PersistentVolumeClaim" and task.ref in first_use and where[task.ref][0] < first_use[task.ref]:
            problems.append(
                Problem(
                    task.ref,
                    task.ref,
                    "a step before its first consumer: Argo CD waits for it to be "
                    "Bound, which a WaitForFirstConsumer class never does",
                )
            )
    return problems
