"""Context of the performance canary's objects (`observe.canary`): a CronJob running `k3deploy bench` at the
published method against one gated leader, its dataset ConfigMap, its report ConfigMap and its least RBAC. Pure.

The dataset ConfigMap holds what `k3deploy bench --dataset builtin --subset S --category C --num-prompts N` would
send, as the JSONL bench reads (`{"id", "category", "prompt"}` per line), so the canary's prompt-set digest equals a
local run's; its revision (that digest, and the k3deploy version that rendered it) is in its annotations and in each
report's `settings.prompt_set_sha256`.
"""

from __future__ import annotations

import json

from k3deploy import __version__, prompts
from k3deploy.lws import leader_url
from k3deploy.profile.model import Profile
from k3deploy.profile.observe_spec import REPORT_KEY

#: Where the CronJob's pod mounts the dataset ConfigMap, and its one key.
DATASET_MOUNT_DIR = "/etc/k3deploy-canary"
DATASET_KEY = "prompts.jsonl"
#: Annotations recording the dataset's revision.
DATASET_ANNOTATIONS = ("k3deploy/dataset", "k3deploy/dataset-sha256", "k3deploy/rendered-by")
#: The component label of the canary's objects.
CANARY_COMPONENT = "canary"


def canary_names(name: str) -> dict[str, str]:
    """Names of the canary's objects: the CronJob (and its ServiceAccount, Role, RoleBinding) and the ConfigMaps."""
    return {"canary": f"{name}-canary", "dataset": f"{name}-canary-dataset", "report": f"{name}-canary-report"}


def dataset_rows(profile: Profile) -> list[dict[str, str]]:
    """The prompts the canary sends: the first `requests` of each category of the built-in subset, in file order."""
    canary = profile.observe.canary
    chosen = [p for p in prompts.subset(canary.subset) if p.category in canary.categories]
    rows: list[dict[str, str]] = []
    for category in canary.categories:
        rows += [{"id": p.id, "category": p.category, "prompt": p.text} for p in chosen if p.category == category][
            : canary.requests
        ]
    return rows


def dataset_jsonl(rows: list[dict[str, str]]) -> str:
    """The rows as JSONL."""
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def bench_args(profile: Profile, profile_path: str) -> list[str]:
    """The canary container's arguments: one bs=1 run of the dataset against the group's leader, pushed and kept."""
    canary, kube = profile.observe.canary, profile.kubernetes
    names = canary_names(profile.name)
    return [
        "bench",
        "--endpoint",
        leader_url(profile.name, kube.namespace, canary.group, profile.vllm.port),
        "-p",
        profile_path,
        "--dataset",
        f"jsonl:{DATASET_MOUNT_DIR}/{DATASET_KEY}",
        "--concurrency",
        "1",
        "--output-tokens",
        str(canary.output_tokens),
        "--temperature",
        f"{canary.temperature:g}",
        "--top-p",
        f"{canary.top_p:g}",
        "--label",
        "canary",
        "--push",
        "profile",
        "--group",
        str(canary.group),
        "--report-configmap",
        f"{kube.namespace}/{names['report']}",
    ]


def canary_context(profile: Profile, profile_path: str) -> dict[str, object]:
    """Every value the canary's templates use ({} when the canary is off)."""
    canary = profile.observe.canary
    if not canary.enabled:
        return {}
    rows = dataset_rows(profile)
    digest = prompts.set_digest((r["id"], r["category"], r["prompt"]) for r in rows)
    source = f"builtin/{canary.subset}:{','.join(canary.categories)}:{canary.requests}"
    return {
        "canary": {
            "spec": canary,
            "names": canary_names(profile.name),
            "args": bench_args(profile, profile_path),
            "dataset_key": DATASET_KEY,
            "dataset_mount_dir": DATASET_MOUNT_DIR,
            "dataset_jsonl": dataset_jsonl(rows),
            "dataset_annotations": dict(zip(DATASET_ANNOTATIONS, (source, digest, __version__), strict=True)),
            "deadline_s": canary.deadline_s,
            "report_key": REPORT_KEY,
        }
    }
