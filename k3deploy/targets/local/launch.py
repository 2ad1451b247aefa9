"""What the local target runs: the exact argv, environment and identity hash of the vLLM server.

Pure: paths in, a `Launch` out. The argv comes from the one `serve_command` every target shares, after the
profile's rehearsal placeholders are swapped for the generated model folder.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from k3deploy.profile.model import Profile
from k3deploy.render.argv import canonical_json, serve_command, serve_env

#: Files of the state directory.
STATE_FILE = "server.json"
LOG_FILE = "server.log"
MODEL_DIR = "model"
CACHE_DIR = "vllm-cache"
#: vLLM's engine and API server talk over ZMQ IPC sockets in TMPDIR, and a socket path may not exceed 107
#: bytes: TMPDIR is a short folder in the system temp directory, named after the state directory.
_SCRATCH_PREFIX = "k3deploy-"


@dataclass(frozen=True)
class Launch:
    """One server start: argv, the environment the profile adds, where it logs, and its identity."""

    argv: list[str]
    env: dict[str, str]
    log_path: Path
    model_path: str
    scratch: Path
    argv_hash: str


def default_state_dir(profile: Profile, home: Path, xdg_cache_home: str | None = None) -> Path:
    """`local.state_dir`, else $XDG_CACHE_HOME/k3deploy/<profile name>, else ~/.cache/k3deploy/<profile name>."""
    if profile.local.state_dir:
        return Path(os.path.expanduser(profile.local.state_dir)).absolute()
    cache = Path(xdg_cache_home) if xdg_cache_home else home / ".cache"
    return cache / "k3deploy" / profile.name


def model_path(profile: Profile, state_dir: Path) -> str:
    """The folder or hub id vLLM loads: the generated folder for a rehearsal model, else `model.id` as is."""
    if profile.model.rehearsal:
        return str(state_dir / MODEL_DIR)
    model_id = profile.model.id
    return os.path.expanduser(model_id) if model_id.startswith("~") else model_id


def resolved(profile: Profile, state_dir: Path) -> Profile:
    """The profile with the rehearsal model id replaced by its folder, in the model and in the draft."""
    if not profile.model.rehearsal:
        return profile
    path = model_path(profile, state_dir)
    spec = profile.speculative
    if spec is not None and spec.model == profile.model.id:
        spec = spec.model_copy(update={"model": path})
    return profile.model_copy(update={"speculative": spec})


def argv_hash(argv: list[str], env: dict[str, str]) -> str:
    """Identity of a server: the same hash means the running server already serves this profile."""
    return hashlib.sha256(canonical_json({"argv": argv, "env": env}).encode()).hexdigest()[:16]


def scratch_dir(state_dir: Path, temp_root: Path) -> Path:
    """The server's TMPDIR: short (socket paths live there) and unique to the state directory."""
    return temp_root / (_SCRATCH_PREFIX + hashlib.sha256(str(state_dir).encode()).hexdigest()[:12])


def plan_launch(profile: Profile, state_dir: Path, python: str, temp_root: Path) -> Launch:
    """The launch of `profile` with the interpreter `python`, its files under `state_dir` and `temp_root`."""
    path = model_path(profile, state_dir)
    argv = serve_command(resolved(profile, state_dir), role="local", model_path=path, python=python)
    scratch = scratch_dir(state_dir, temp_root)
    # vLLM leaves temporary files and compile caches behind: keep them in folders of our own.
    env = {**serve_env(profile), "TMPDIR": str(scratch), "VLLM_CACHE_ROOT": str(state_dir / CACHE_DIR)}
    return Launch(
        argv=argv,
        env=env,
        log_path=state_dir / LOG_FILE,
        model_path=path,
        scratch=scratch,
        argv_hash=argv_hash(argv, env),
    )
