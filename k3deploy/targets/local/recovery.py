"""Find the server when its record is missing or unreadable, and rebuild the record from the live process.

The process proves itself k3deploy's (see `process.find_servers`): its command line runs vLLM's server on
the profile's port and its environment names this state directory and carries a server id. The rebuilt
record says `recovered`, so `status` tells the user how the server was found.
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

import psutil

from k3deploy.profile.model import Profile
from k3deploy.targets.local import process
from k3deploy.targets.local.launch import Launch, argv_hash
from k3deploy.targets.local.state import ServerRecord


def _arg(cmdline: list[str], flag: str) -> str | None:
    return next((b for a, b in pairwise(cmdline) if a == flag), None)


def recover(profile: Profile, state_dir: Path, launch: Launch) -> ServerRecord | None:
    """A record rebuilt from k3deploy's running server for `state_dir` and the profile's port, if there is one."""
    for proc in process.find_servers(state_dir, profile.vllm.port):
        try:
            cmdline, created = proc.cmdline(), proc.create_time()
        except (psutil.Error, OSError):  # it vanished since it was found: not this one
            continue
        environ = process.environ_of(proc)
        argv = launch.argv if process.cmdline_matches(cmdline, launch.argv) else cmdline
        env = {key: environ[key] for key in launch.env if key in environ}
        return ServerRecord(
            profile=profile.name,
            pid=proc.pid,
            create_time=created,
            host=profile.local.host,
            port=profile.vllm.port,
            argv=argv,
            env=env,
            argv_hash=argv_hash(argv, env),
            log_path=str(launch.log_path),
            model_path=_arg(cmdline, "--model") or launch.model_path,
            rehearsal=profile.model.rehearsal,
            started_at=datetime.fromtimestamp(created, UTC).isoformat(timespec="seconds"),
            server_id=environ.get(process.SERVER_ID_ENV),
            recovered=True,
        )
    return None
