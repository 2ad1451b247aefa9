"""Which waited objects' pods mount a PersistentVolumeClaim (pure): what makes the waiter read claims."""

from __future__ import annotations

from k3deploy.pod_volumes import claim_names, mounts_claims, pod_specs
from k3deploy.profile import load_profile
from k3deploy.render.manifests import rendered_objects
from tests.render.sets import builtin_prefetch


def _volumes(*claims: str) -> dict:
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    volumes += [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    return {"volumes": volumes}


def test_claim_names_are_the_mounted_claims_each_once_in_order() -> None:
    assert claim_names(_volumes("cache", "other", "cache")) == ["cache", "other"]
    assert claim_names(_volumes()) == []
    assert claim_names({}) == []


def test_a_jobs_template_and_both_templates_of_a_leader_worker_set_are_read() -> None:
    job = {"kind": "Job", "spec": {"template": {"spec": _volumes("cache")}}}
    leader_only = {
        "kind": "LeaderWorkerSet",
        "spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": _volumes("c")}}},
    }
    worker_only = {
        "kind": "LeaderWorkerSet",
        "spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": _volumes("c")}}},
    }
    assert pod_specs(job) == [_volumes("cache")]
    assert mounts_claims([job]) and mounts_claims([leader_only]) and mounts_claims([worker_only])
    bare = {"kind": "Job", "spec": {"template": {"spec": _volumes()}}}
    assert not mounts_claims([bare])
    # Only pods' templates count: a claim object itself mounts nothing.
    assert not mounts_claims([{"kind": "PersistentVolumeClaim", "spec": {"volumes": _volumes("x")["volumes"]}}])


def test_the_rendered_serving_group_and_prefetch_job_mount_the_weight_cache() -> None:
    objects = rendered_objects(load_profile("kimi-k3-gb300-tp16"))
    mounting = sorted(o["kind"] + "/" + o["metadata"]["name"] for o in objects if mounts_claims([o]))
    assert "LeaderWorkerSet/kimi-k3-gb300-tp16" in mounting
    assert f"Job/{builtin_prefetch('kimi-k3-gb300-tp16')}" in mounting
