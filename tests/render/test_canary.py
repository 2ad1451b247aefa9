"""The rendered performance canary (`observe.canary`): off by default; on, a CronJob running `k3deploy bench` at the
published method against one group's leader, its dataset and report ConfigMaps and least RBAC, each valid against
the strict Kubernetes 1.34 schemas, its pods admitted at Pod Security "restricted"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from k3deploy.bench.datasets import load_dataset, prompt_set_digest, select
from k3deploy.profile import load_profile
from k3deploy.render.manifests import COMPONENT_LABEL, build
from k3deploy.render.pod_security import pod_templates, violations
from k3deploy.rollout.order import phases
from tests.bench.test_cli import assert_clean_error
from tests.conftest import run_cli
from tests.render.kube_schemas import K8S_VERSION

K3 = "kimi-k3-gb300-tp16"
GATEWAY = "http://pushgateway.monitoring.svc:9091"
ON = ["observe.canary.enabled=true", f"observe.pushgateway_url={GATEWAY}"]
CANARY_KINDS = [
    ("ServiceAccount", "canary"),
    ("Role", "canary"),
    ("RoleBinding", "canary"),
    ("ConfigMap", "canary-dataset"),
    ("ConfigMap", "canary-report"),
    ("CronJob", "canary"),
]


def _canary(sets: list[str] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    objects = [m.obj for m in build(load_profile(K3, [*ON, *(sets or [])]))]
    return {
        (o["kind"], o["metadata"]["labels"][COMPONENT_LABEL]): o
        for o in objects
        if o["metadata"]["labels"].get(COMPONENT_LABEL, "").startswith("canary")
    }


def _args(cron: dict[str, Any]) -> list[str]:
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return list(container["args"])


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_the_canary_is_off_by_default_and_on_is_applied_with_the_serving_objects() -> None:
    off = [m.obj for m in build(load_profile(K3))]
    assert not [o for o in off if o["kind"] == "CronJob" or "canary" in o["metadata"]["name"]]
    manifests = build(load_profile(K3, ON))
    before_smoke = manifests[-len(CANARY_KINDS) - 1 : -1]
    assert [(m.kind, m.obj["metadata"]["labels"][COMPONENT_LABEL]) for m in before_smoke] == CANARY_KINDS
    assert before_smoke[-1].filename == f"19-cronjob-{K3}-canary.yaml"
    # In the serving phase: `up --smoke in-cluster` never applies the smoke phase's objects (the smoke Job's hook).
    named = {p.name: [o["kind"] for o in p.objects] for p in phases([m.obj for m in manifests])}
    assert "CronJob" in named["serving"] and named["smoke"] == ["Job"]


@pytest.mark.parametrize("sets", [[], ["observe.canary.time_zone=Europe/Paris", "kubernetes.job_tolerations=[]"]])
def test_every_canary_object_validates_strictly_against_kubernetes_1_34(sets: list[str]) -> None:
    for obj in _canary(sets).values():
        assert kubernetes_validate.validate(obj, K8S_VERSION, strict=True) == K8S_VERSION


def test_the_cronjob_runs_one_bounded_run_at_a_time_on_its_schedule() -> None:
    cron = _canary(["observe.canary.schedule=@hourly", "observe.canary.deadline_s=900", "observe.canary.history=2"])[
        ("CronJob", "canary")
    ]
    spec = cron["spec"]
    assert spec["schedule"] == "@hourly" and spec["concurrencyPolicy"] == "Forbid"
    assert spec["startingDeadlineSeconds"] == 600
    assert spec["successfulJobsHistoryLimit"] == spec["failedJobsHistoryLimit"] == 2
    job = spec["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] == 900 and job["backoffLimit"] == 0
    assert job["template"]["spec"]["restartPolicy"] == "Never"


def test_the_cronjob_benches_the_groups_leader_at_the_published_method() -> None:
    profile = load_profile(K3, [*ON, "observe.canary.group=1"])
    args = _args(_canary(["observe.canary.group=1"])[("CronJob", "canary")])
    assert args[0] == "bench"
    # The leader of group 1 by its DNS name under the LWS headless Service, not the API Service.
    assert _flag(args, "--endpoint") == f"http://{K3}-1.{K3}.kimi-k3.svc:{profile.vllm.port}"
    assert (_flag(args, "--concurrency"), _flag(args, "--temperature"), _flag(args, "--top-p")) == ("1", "1", "0.95")
    assert _flag(args, "--output-tokens") == "1536"
    assert (_flag(args, "--push"), _flag(args, "--group")) == ("profile", "1")
    assert _flag(args, "--report-configmap") == f"kimi-k3/{K3}-canary-report"
    assert _flag(args, "--dataset") == "jsonl:/etc/k3deploy-canary/prompts.jsonl"
    assert _flag(args, "-p") == "/etc/k3deploy/profile.yaml"


def test_the_dataset_is_what_bench_loads_with_its_revision_recorded(tmp_path: Path) -> None:
    sets = [
        "observe.canary.subset=qualitative",
        "observe.canary.categories=[coding,writing]",
        "observe.canary.requests=3",
    ]
    config_map = _canary(sets)[("ConfigMap", "canary-dataset")]
    path = tmp_path / "prompts.jsonl"
    path.write_text(config_map["data"]["prompts.jsonl"], encoding="utf-8")
    mounted = load_dataset(f"jsonl:{path}")
    local = select(load_dataset("builtin", "qualitative"), ["coding", "writing"], 3)
    assert [(p.id, p.category, p.text) for p in mounted.prompts] == [
        (p.id, p.category, p.text) for ps in local.values() for p in ps
    ]
    digest = prompt_set_digest([p for ps in local.values() for p in ps])
    annotations = config_map["metadata"]["annotations"]
    assert annotations["k3deploy/dataset-sha256"] == digest == prompt_set_digest(mounted.prompts)
    assert annotations["k3deploy/dataset"] == "builtin/qualitative:coding,writing:3"


def test_the_canary_may_only_read_and_replace_its_own_report() -> None:
    objects = _canary()
    (rule,) = objects[("Role", "canary")]["rules"]
    assert rule == {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": [f"{K3}-canary-report"],
        "verbs": ["get", "update"],
    }
    binding = objects[("RoleBinding", "canary")]
    pod = objects[("CronJob", "canary")]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": f"{K3}-canary", "namespace": "kimi-k3"}]
    assert pod["serviceAccountName"] == f"{K3}-canary" and binding["roleRef"]["name"] == f"{K3}-canary"
    # Rendered without data: applying the set again keeps what the canary wrote.
    assert "data" not in objects[("ConfigMap", "canary-report")]


def test_the_canary_pod_meets_restricted_and_runs_the_pinned_k3deploy_image() -> None:
    image = "ghcr.io/k3deploy/k3deploy:0.1.0@sha256:" + "c" * 64
    objects = list(_canary([f"kubernetes.smoke_image={image}"]).values())
    ((where, pod, annotations),) = pod_templates(objects)
    assert where == f"CronJob/{K3}-canary"
    assert violations("restricted", pod, annotations) == {}
    assert pod["containers"][0]["image"] == image


@pytest.mark.parametrize(
    ("sets", "needle"),
    [
        (["observe.canary.enabled=true"], "observe.pushgateway_url"),
        ([*ON, "observe.canary.schedule=61 * * * *"], "outside 0-59"),
        ([*ON, "observe.canary.categories=[poetry]"], "'poetry' is not in the built-in throughput subset"),
        ([*ON, "observe.canary.requests=5"], "has 4 prompts"),
        ([*ON, "observe.canary.acceptance_floors={coding: 0.5}"], "at least 1"),
    ],
)
def test_a_bad_canary_section_is_one_clean_error(sets: list[str], needle: str) -> None:
    result = run_cli("render", "-p", K3, *(x for s in sets for x in ("--set", s)))
    assert_clean_error(result, 2, needle)


def test_the_rendered_dataset_is_json_lines() -> None:
    text = _canary()[("ConfigMap", "canary-dataset")]["data"]["prompts.jsonl"]
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["category"] for r in rows] == ["low_entropy", "low_entropy"]
    assert all(set(r) == {"id", "category", "prompt"} for r in rows)
