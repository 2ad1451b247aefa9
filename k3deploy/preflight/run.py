"""Gather the facts a preflight run asks for and evaluate them: the entry point `up` and the CLI share."""

from __future__ import annotations

import os
from collections.abc import Sequence

from k3deploy.errors import EXIT_FAILED, EnvironmentProblem, K3DeployError, ProfileError
from k3deploy.kobject import KubeObject
from k3deploy.kube.deadline import Deadline
from k3deploy.kube.options import KubeOptions
from k3deploy.pin.floating import node_arch
from k3deploy.preflight import node as probe
from k3deploy.preflight.access import Access
from k3deploy.preflight.checks import evaluate
from k3deploy.preflight.checks_pinning import image_platform_check
from k3deploy.preflight.cluster import cluster_facts as read_cluster
from k3deploy.preflight.facts import Facts, GpuNodeFacts
from k3deploy.profile.model import Profile
from k3deploy.render.manifests import rendered_objects
from k3deploy.report.model import CheckResult, Status

#: Preflight asks the registry once; a registry slower than this is reported as unreachable (WARN).
REGISTRY_TIMEOUT_S = 10.0
#: The whole registry check (token, index, the nodes' image, its config) ends within this, trickling or not.
REGISTRY_BUDGET_S = 30.0


def host_cache_path(profile: Profile) -> str:
    """Where this host would keep the weights: the pod's cache mount, or the local target's state directory."""
    if not profile.on_kubernetes:
        return profile.local.state_dir or os.path.join(os.path.expanduser("~"), ".cache", "k3deploy")
    return profile.kubernetes.model_cache_path


def run_preflight(
    profile: Profile,
    node: bool,
    cluster: bool,
    kube: KubeOptions | None = None,
    *,
    gpus: bool = True,
    gpus_optional: bool = False,
    objects: Sequence[KubeObject] | None = None,
    needs: Sequence[Access],
) -> list[CheckResult]:
    """Check `profile` against this node (`node`: GPUs unless `gpus=False`, and host) and/or the cluster (`cluster`).

    `objects`: the set the command rendered (rendered here, once, when the caller has none); the cluster checks
    are derived from it. `needs`: the access review, what the command's set and plan use (rollout/access.py
    `command_access`). It has no default: a caller that forgot it would get a review of nothing, and `up` would meet
    its first 403 halfway through the rollout.

    Raises EnvironmentProblem (exit 3) when it cannot look: no NVML and no nvidia-smi (with `gpus_optional`, seeing
    no GPU is a WARN and the GPU checks SKIP instead), API unreachable, forbidden.
    """
    gpu_facts = host_facts = cluster_facts = None
    unseen = None
    if node:
        if gpus:
            gpu_facts, unseen = seen_gpus(gpus_optional)
        host_facts = probe.host_facts(host_cache_path(profile))
    if cluster:
        objects = rendered_or_empty(profile) if objects is None else objects
        cluster_facts = read_cluster(profile, kube or KubeOptions(), needs, objects or ())
    facts = Facts(gpu=gpu_facts, gpu_unseen=unseen, host=host_facts, cluster=cluster_facts)
    results = evaluate(profile, facts, objects or ())
    if cluster and profile.on_kubernetes:
        results.append(image_platforms(profile, (kube or KubeOptions()).deadline))
    return results


def seen_gpus(optional: bool) -> tuple[GpuNodeFacts | None, str | None]:
    """This node's GPU facts; with `optional`, (None, why) when this process sees no GPU at all (no NVML and no
    nvidia-smi, or none listed) rather than an EnvironmentProblem or a failed count."""
    try:
        facts = probe.gpu_facts()
    except EnvironmentProblem as exc:
        if not optional:
            raise
        return None, exc.message
    if optional and not facts.gpus:
        return None, f"{facts.source} lists no GPU"
    return facts, None


def rendered_or_empty(profile: Profile) -> list[KubeObject]:
    """The objects the profile renders to, for a preflight of its own (none when it cannot render: the render
    stage, or `render`, reports why)."""
    try:
        return rendered_objects(profile)
    except ProfileError:
        return []


def image_platforms(profile: Profile, command: Deadline | None = None) -> CheckResult:
    """Ask the registry which platforms the serving image is built for; an unreachable registry is a WARN.

    The check takes at most REGISTRY_BUDGET_S, and no more than what is left of the `command`'s deadline.
    """
    image = profile.vllm.image
    left = command.remaining() if command is not None else None
    budget = REGISTRY_BUDGET_S if left is None else max(0.0, min(REGISTRY_BUDGET_S, left))
    # httpx loads only when the registry is asked: `render` and `--help` never pay for it.
    from k3deploy.pin.registry import RegistryClient

    try:
        with RegistryClient(
            timeout_s=REGISTRY_TIMEOUT_S,
            mirrors=profile.kubernetes.registry_mirrors,
            deadline=Deadline(budget),
        ) as registry:
            resolved = registry.resolve(image, arch=node_arch(profile))
    except K3DeployError as exc:
        if exc.exit_code == EXIT_FAILED:  # the registry answered: no such image is a failure, not a warning
            return CheckResult(
                name="image.platforms",
                status=Status.FAIL,
                measured=None,
                target=f"linux/{node_arch(profile)}",
                detail=exc.message,
                hint=exc.hint,
            )
        return image_platform_check(profile, image, None, exc.message)
    except Exception as exc:  # an advisory check: whatever it meets is its own WARN, never the end of preflight
        return image_platform_check(
            profile, image, None, f"the registry check itself failed ({type(exc).__name__}: {exc})"
        )
    return image_platform_check(profile, image, resolved, None)
