"""The serving pods' `gpu-check` init container: what it expects of the GPUs (from the profile) and the script it
runs (k3deploy/pod_scripts/gpu_check.py, shipped as text in the profile ConfigMap). Pure apart from reading that
file.

It runs in the vLLM image the pod already pulls, with the image's `python3`: the serving pods need no other image
(an air-gapped rack mirrors vLLM's, rarely a new tool's).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from k3deploy.kobject import JsonObject
from k3deploy.pod_scripts import gpu_check as script
from k3deploy.profile.model import Profile
from k3deploy.profile.names import quantity_bytes
from k3deploy.render.argv import canonical_json

#: The script's key in the profile ConfigMap (and its file name where the pod mounts the ConfigMap).
SCRIPT_KEY = "gpu-check.py"


@lru_cache(maxsize=1)
def script_text() -> str:
    """The script's source, as the ConfigMap carries it."""
    return Path(script.__file__).read_text(encoding="utf-8")


def needs_imex_channel(profile: Profile) -> bool:
    """Whether the pods must hold an IMEX channel: a ComputeDomain injects one, and NCCL_MNNVL_ENABLE=1 fails NCCL's
    init without one."""
    return profile.kubernetes.compute_domain or profile.vllm.env.get("NCCL_MNNVL_ENABLE") == "1"


def expectations(profile: Profile) -> JsonObject:
    """K3DEPLOY_GPU_CHECK: what the script compares the pod's GPUs with (the same fields preflight --node reads)."""
    hw = profile.hardware
    hardware = None
    if hw is not None:
        hardware = {
            "products": [hw.gpu_product, *hw.allowed_products],
            "compute_capability": hw.compute_capability,
            "memory_mib": hw.gpu_memory_mib,
            "min_driver": hw.min_driver_version,
            "min_cuda": hw.min_cuda_version,
            "nvlink_domain": hw.nvlink_domain,
        }
    return {
        "gpus": profile.parallel.gpus_per_node,
        "hardware": hardware,
        "shm_bytes": quantity_bytes(profile.kubernetes.shm_size),
        "imex_channel": needs_imex_channel(profile),
    }


def gpu_check_context(profile: Profile, mount_dir: str) -> JsonObject:
    """Template context of the init container and the ConfigMap key (None when kubernetes.gpu_check is off)."""
    if not profile.kubernetes.gpu_check:
        return {"gpu_check": None}
    return {
        "gpu_check": {
            "key": SCRIPT_KEY,
            "script": script_text(),
            "command": ["python3", f"{mount_dir}/{SCRIPT_KEY}"],
            "env": [
                {"name": script.EXPECT_ENV, "value": canonical_json(expectations(profile))},
                # The root filesystem is read-only: no bytecode next to the script, nothing under the image's HOME.
                {"name": "HOME", "value": "/tmp"},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
                {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            ],
        }
    }
