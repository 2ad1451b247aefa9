"""The checks of IaC scanners the set fails on purpose, as checkov skip annotations with their reason. Pure.

checkov (bridgecrewio/checkov checkov/kubernetes/kubernetes_utils.py) reads `checkov.io/skip<N>: CHECK_ID=reason`
from an object's metadata.annotations (for the serving pods: the LeaderWorkerSet's pod templates, which their
pods carry). Everything else the scanner asks for is fixed in the templates; what is left is listed here, each
with one line saying why, so an exception is explicit and has an owner.
"""

from __future__ import annotations

from k3deploy.profile.model import Profile

#: Image pull policy: the rendered policy is the kubelet's default (IfNotPresent for a tag, which a digest also is).
PULL_POLICY = ("CKV_K8S_15", "pinned images (k3deploy pin); re-pulling multi-GB images slows every restart")
#: A tag where the scanner wants a digest: only while the profile's image is not pinned.
NOT_PINNED = ("CKV_K8S_43", "tag until k3deploy pin rewrites the profile's image to a digest")
#: The serving pods' exceptions (templates/leaderworkerset.yaml.j2 explains the root ones).
SERVING: tuple[tuple[str, str], ...] = (
    ("CKV_K8S_11", "no CPU limit by design: CFS throttling stalls the threads that feed the GPUs"),
    (
        "CKV_K8S_13",
        "no memory limit by design: a host-memory spike while loading weights would OOM-kill the whole group",
    ),
    ("CKV_K8S_23", "the vllm/vllm-openai image runs as root (no USER in its Dockerfile)"),
    ("CKV_K8S_40", "the vllm/vllm-openai image runs as root (no USER in its Dockerfile)"),
    ("CKV_K8S_22", "vLLM writes its compile and kernel caches under /root"),
)
#: The headless workers serve no HTTP: the leader's readiness is the group's.
WORKER: tuple[tuple[str, str], ...] = (
    ("CKV_K8S_9", "headless vLLM worker serves no HTTP; the leader's readiness covers the group"),
)
#: Without kubernetes.worker_liveness (render/worker_probe.py) a worker has no liveness probe either.
WORKER_NO_LIVENESS: tuple[tuple[str, str], ...] = (
    ("CKV_K8S_8", "headless vLLM worker serves no HTTP; the group is recreated when it exits"),
)


def skip_annotations(checks: list[tuple[str, str]]) -> dict[str, str]:
    """`checkov.io/skip<N>` annotations for (check id, reason) pairs (the reason may not hold `=`, checkov splits on it)."""
    out = {}
    for index, (check, reason) in enumerate(checks, start=1):
        if "=" in reason:
            raise ValueError(f"skip reason of {check} holds '=': {reason!r}")
        out[f"checkov.io/skip{index}"] = f"{check}={reason}"
    return out


def image_skips(image: str) -> list[tuple[str, str]]:
    """Skips every container image of the set needs: the pull policy, and the digest while it is a tag."""
    return [PULL_POLICY] if "@sha256:" in image else [PULL_POLICY, NOT_PINNED]


#: The smoke Job that gates leaders (smoke.gate_traffic) labels them through the API as its own account.
GATE_TOKEN = ("CKV_K8S_38", "the smoke Job labels the leaders it gated through the API, as its own account")


def job_skips(image: str, token: bool = False) -> dict[str, str]:
    """Annotations of a Job running `image` (`token`: it mounts its ServiceAccount's token on purpose)."""
    return skip_annotations([*image_skips(image), *([GATE_TOKEN] if token else [])])


#: The staging DaemonSet's container that writes the tray's hostPath folder (templates/weight-staging-daemonset.yaml.j2).
STAGING: tuple[tuple[str, str], ...] = (
    ("CKV_K8S_23", "stage writes the hostPath folder the kubelet creates root-owned; no capability is kept"),
    ("CKV_K8S_40", "stage writes the hostPath folder the kubelet creates root-owned; no capability is kept"),
)


def staging_skips(image: str) -> dict[str, str]:
    """Annotations of the staging DaemonSet's pods (running the k3deploy `image`)."""
    return skip_annotations([*image_skips(image), *STAGING])


def serving_skips(profile: Profile, role: str) -> dict[str, str]:
    """Annotations of the leader's or a worker's pod template."""
    checks = [*image_skips(profile.vllm.image), *SERVING]
    if role == "worker":
        checks += [*WORKER, *(() if profile.kubernetes.worker_liveness else WORKER_NO_LIVENESS)]
    return skip_annotations(checks)
