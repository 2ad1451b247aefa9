"""The headless worker pods' livenessProbe: k3deploy/pod_scripts/worker_alive.py run by the vLLM image's python3 as
`python3 -c <script> <GPUs per node>` (an exec probe: the workers serve no port). Pure apart from reading the file.

It judges only after the start-up budget (initialDelaySeconds): before the leader's startup probe has passed, the
executor may not have started its workers yet, and weights read from a network file system put a worker in `D`
for moments at a time. After it, four probes 30 s apart that all fail restart the container, and LeaderWorkerSet
recreates the group (its restart policy), instead of the group hanging until the leader's
VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from k3deploy.pod_scripts import worker_alive
from k3deploy.profile.model import Profile

PERIOD_S = 30
FAILURES = 4
TIMEOUT_S = 10


@lru_cache(maxsize=1)
def script_text() -> str:
    """The script's source as the probe's command carries it: without its module docstring (the pod spec says what
    the code does; the docstring says why, in the repository)."""
    text = Path(worker_alive.__file__).read_text(encoding="utf-8")
    return text[text.index("from __future__") :]


def worker_probe(profile: Profile) -> dict[str, object] | None:
    """The worker container's livenessProbe (None with kubernetes.worker_liveness off)."""
    if not profile.kubernetes.worker_liveness:
        return None
    return {
        "exec": {"command": ["python3", "-c", script_text(), str(profile.parallel.gpus_per_node)]},
        "initialDelaySeconds": profile.startup_budget.total_s,
        "periodSeconds": PERIOD_S,
        "timeoutSeconds": TIMEOUT_S,
        "failureThreshold": FAILURES,
    }
