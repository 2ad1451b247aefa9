"""Node-local weights (kubernetes.weight_staging: node-local): the staging DaemonSet's and the serving pods' parts of
the template context. Pure apart from reading the script shipped in the profile ConfigMap.

The DaemonSet lands on exactly the trays a group may: the serving pods' node selector and tolerations, and the
clique label present (their pod affinity groups them by it, so a tray without it never takes a serving pod). It
runs `k3deploy stage` (k3deploy/pod_scripts/node_weights.py) in the k3deploy image the smoke and node-preflight
Jobs run (kubernetes.smoke_image, published by the release workflow and pinned by `k3deploy pin`), then idles, and
keeps the vLLM image on the tray (a second, idle container: an image a running container uses is never collected).

Each serving pod's `pick-weights` init container links the tray's copy, or the weight volume's snapshot, into an
emptyDir, and vLLM serves those links: `vllm serve <weights>/target` with the draft at `<weights>/draft`. The claim
stays one volume (tests/render/test_pod_rules.py); the tray's folder is a hostPath volume, read-only in the serving
pods, which is why the set then needs Pod Security privileged (kubernetes_spec.py refuses node-local otherwise).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from k3deploy.pod_scripts import node_weights as script
from k3deploy.profile.model import Profile
from k3deploy.render.argv import serve_command

#: The script's key in the profile ConfigMap (and its file name where the pods mount the ConfigMap).
SCRIPT_KEY = "node-weights.py"
#: Where the tray's staging folder is mounted (the DaemonSet writes it; the serving pods read it).
STAGING_MOUNT = "/k3deploy-staging"
#: The serving pods' emptyDir of links to the weights they load.
WEIGHTS_MOUNT = "/k3deploy-weights"
#: Component label of the DaemonSet and its pods.
STAGING_COMPONENT = "weight-staging"
#: The root filesystems are read-only: nothing under the image's HOME, no bytecode beside the script.
_STDLIB_ENV = [{"name": "HOME", "value": "/tmp"}, {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}]


@lru_cache(maxsize=1)
def script_text() -> str:
    """The script's source, as the ConfigMap carries it."""
    return Path(script.__file__).read_text(encoding="utf-8")


def staging_on(profile: Profile) -> bool:
    """Whether the set stages the weights on the trays (kubernetes.weight_staging: node-local)."""
    return profile.kubernetes.weight_staging == "node-local"


def staged_profile(profile: Profile) -> Profile:
    """The profile as the serving pods run it from the links: no --revision (a folder is one revision), the draft
    at its link."""
    spec = profile.speculative
    if spec is not None and spec.model:
        spec = spec.model_copy(update={"model": f"{WEIGHTS_MOUNT}/{script.ROLES[1]}", "revision": None})
    model = profile.model.model_copy(update={"revision": None})
    return profile.model_copy(update={"model": model, "speculative": spec})


def _by_name(env: list[dict[str, str]]) -> list[dict[str, str]]:
    return sorted(env, key=lambda entry: entry["name"])


def _affinity(profile: Profile) -> dict[str, object]:
    """Trays carrying the clique label: the serving pods' pod affinity groups by it, so only those take a group."""
    term = {"matchExpressions": [{"key": profile.kubernetes.clique_label, "operator": "Exists"}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def staging_context(profile: Profile, mount_dir: str, base_env: dict[str, str]) -> dict[str, object]:
    """Template context of the DaemonSet and the serving pods' part (`staging` None when weight_staging is none),
    and the serving pods' commands (from the links when staging, else the Hub ids the weight volume caches).

    `base_env`: HF_HOME, K3DEPLOY_PREFETCH and K3DEPLOY_PREFETCH_MARKER as the prefetch gets them.
    """
    kube = profile.kubernetes
    if not staging_on(profile):
        return {
            "staging": None,
            "leader_command": serve_command(profile, role="leader"),
            "worker_command": serve_command(profile, role="worker"),
        }
    staged = staged_profile(profile)
    target = f"{WEIGHTS_MOUNT}/{script.ROLES[0]}"
    cap = (
        []
        if kube.staging_max_mb_s is None
        else [{"name": "K3DEPLOY_STAGING_MAX_MB_S", "value": f"{kube.staging_max_mb_s:g}"}]
    )
    common: list[dict[str, str]] = [
        *({"name": k, "value": v} for k, v in base_env.items()),
        {"name": "K3DEPLOY_STAGING", "value": STAGING_MOUNT},
        *_STDLIB_ENV,
    ]
    return {
        "staging": {
            "name": f"{profile.name}-weight-staging",
            "component": STAGING_COMPONENT,
            "key": SCRIPT_KEY,
            "script": script_text(),
            "host_path": kube.staging_path,
            "mount": STAGING_MOUNT,
            "weights": WEIGHTS_MOUNT,
            "stage_command": ["python3", f"{mount_dir}/{SCRIPT_KEY}", "stage"],
            "pick_command": ["python3", f"{mount_dir}/{SCRIPT_KEY}", "pick"],
            "stage_env": _by_name(
                [*common, *cap, {"name": "K3DEPLOY_STAGING_TIMEOUT_S", "value": str(kube.prefetch_timeout_s)}],
            ),
            "pick_env": _by_name(
                [*common, {"name": "K3DEPLOY_WEIGHTS", "value": WEIGHTS_MOUNT}],
            ),
            "affinity": _affinity(profile),
        },
        "leader_command": serve_command(staged, role="leader", model_path=target),
        "worker_command": serve_command(staged, role="worker", model_path=target),
    }
