"""`evaluate(profile, facts, objects)`: every preflight check, as pure functions of the profile, its rendered set and
the observed facts.

Pure: no I/O. Node checks live in `checks_node.py`, cluster checks in `checks_cluster.py`; the checks of
the profile itself (pinned versions in `checks_pinning.py`, the capacity plan) always run.
"""

from __future__ import annotations

from collections.abc import Sequence

from k3deploy.kobject import KubeObject
from k3deploy.preflight.checks_cluster import cluster_checks
from k3deploy.preflight.checks_node import gpu_checks, host_checks, unseen_gpu_checks
from k3deploy.preflight.checks_pinning import pinning_checks
from k3deploy.preflight.facts import Facts
from k3deploy.preflight.versions import version_checks as installed_version_checks
from k3deploy.profile.model import Profile
from k3deploy.profile.plan import GIB, plan
from k3deploy.report.model import CheckResult, Status


def capacity_check(profile: Profile) -> CheckResult:
    """The capacity plan as a check: weights + draft + one full-length sequence must fit every GPU."""
    result = plan(profile)
    if result.hbm_bytes_per_gpu is None:
        return CheckResult(name="plan.capacity", status=Status.SKIP, detail=result.reason)
    measured = (
        f"{(result.weight_bytes_per_gpu + result.draft_bytes_per_gpu + result.reserve_bytes_per_gpu) / GIB:.1f} GiB fixed "
        f"+ {result.bytes_per_full_sequence / GIB:.2f} GiB per {result.max_model_len}-token sequence"
    )
    target = f"<= {(result.usable_bytes_per_gpu or 0) / GIB:.1f} GiB usable per GPU"
    if result.fits:
        return CheckResult(
            name="plan.capacity", status=Status.PASS, measured=measured, target=target, detail=result.reason
        )
    return CheckResult(
        name="plan.capacity",
        status=Status.FAIL,
        measured=measured,
        target=target,
        detail=result.reason,
        hint="add GPUs (parallel.*), lower vllm.max_model_len, or use an fp8 KV cache (vllm.kv_cache_dtype=fp8); see `k3deploy plan`",
    )


def evaluate(profile: Profile, facts: Facts, objects: Sequence[KubeObject] = ()) -> list[CheckResult]:
    """All checks for the facts gathered, in a stable order: profile, GPUs, host, cluster (against the rendered
    `objects`, which the cluster checks need)."""
    results = [*pinning_checks(profile), capacity_check(profile)]
    if facts.gpu is not None:
        results += gpu_checks(profile, facts.gpu)
    elif facts.gpu_unseen is not None:
        results += unseen_gpu_checks(facts.gpu_unseen)
    if facts.host is not None:
        results += host_checks(profile, facts.host)
    if facts.cluster is not None:
        results += cluster_checks(profile, facts.cluster, objects)
        results += installed_version_checks(list(objects), facts.cluster.installed_versions)
    return results
