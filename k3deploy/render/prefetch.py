"""The prefetch Job's derived values: its name (a hash of its spec), image, placement and environment. Pure.

Split from render/manifests.py, which renders the Job from them.
"""

from __future__ import annotations

import hashlib
from typing import Any

from k3deploy.profile.model import Profile
from k3deploy.render.argv import canonical_json
from k3deploy.render.serving_pods import compile_cache

#: Longest Job name: the Job controller copies it into the `batch.kubernetes.io/job-name` label of its pods.
PREFETCH_NAME_MAX = 63


def prefetch_job_name(name: str, spec: object) -> str:
    """`<name>-prefetch-<hash of the name and the Job's spec>`: a Job's pod template cannot change, so new revisions
    or a new image are a new Job (Argo CD and Flux create it and prune the old, with no immutable-field error) while
    an unchanged one is left as it is, never re-run. At most 63 characters (the Job controller labels its pods with
    the name); a long name is cut before the hash."""
    digest = hashlib.sha256(f"{name}\n{canonical_json(spec)}".encode()).hexdigest()[:8]
    return f"{f'{name}-prefetch'[: PREFETCH_NAME_MAX - len(digest) - 1].rstrip('-')}-{digest}"


def prefetch_image(profile: Profile) -> str:
    """The prefetch Job's image: kubernetes.prefetch_image, else the vLLM image (python3 and huggingface_hub inside)."""
    return profile.kubernetes.prefetch_image or profile.vllm.image


def prefetch_node_selector(profile: Profile) -> dict[str, str]:
    """kubernetes.job_node_selector, plus the vLLM image's architecture while the prefetch runs that image (an
    arm64-only image must not land on an amd64 CPU node)."""
    kube = profile.kubernetes
    selector = dict(kube.job_node_selector)
    if kube.prefetch_image is None:
        selector.setdefault("kubernetes.io/arch", profile.vllm.image_arch)
    return dict(sorted(selector.items()))


def prefetch_tolerations(profile: Profile) -> list[dict[str, Any]]:
    """kubernetes.job_tolerations, plus the GPU pods' tolerations while the prefetch runs the vLLM image: that image
    is built for the trays' architecture, and a cluster whose CPU nodes are of another one (x86 system nodes beside
    arm64 GB300 trays) can place it only on a tray, where it requests no GPU and runs before the group does."""
    kube = profile.kubernetes
    tolerations = [t.manifest() for t in kube.job_tolerations]
    if kube.prefetch_image is None:
        tolerations += [t for t in (t.manifest() for t in kube.tolerations) if t not in tolerations]
    return tolerations


def compile_cache_env(profile: Profile) -> list[dict[str, str]]:
    """K3DEPLOY_COMPILE_CACHE for the prefetch, which makes the compile cache's folder writable by every UID (the
    serving pods run as root, which an NFS export may squash) before it writes the marker the group waits for."""
    cache = compile_cache(profile)
    return [] if cache is None else [{"name": "K3DEPLOY_COMPILE_CACHE", "value": cache["folder"]}]


def site_env(profile: Profile) -> list[dict[str, str]]:
    """The prefetch's reach into a site's network: a Hub mirror and a proxy (both spellings: the Hub client's HTTP
    stack reads either); none by default."""
    kube = profile.kubernetes
    env: dict[str, str | None] = {"HF_ENDPOINT": kube.hf_endpoint}
    if kube.https_proxy is not None:
        for key in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            env[key] = kube.https_proxy
        if kube.no_proxy:
            env["NO_PROXY"] = env["no_proxy"] = kube.no_proxy
    return [{"name": key, "value": value} for key, value in sorted(env.items()) if value is not None]
