"""Rules every pod k3deploy renders keeps, over every object of each built-in render and the scaled-out one
(tests/render/pod_renders.py): one volume per claim, and serving pods that need no image but the vLLM one."""

from __future__ import annotations

import pytest

from k3deploy.pod_volumes import every_pod_spec, repeated_claims
from k3deploy.profile import load_profile
from tests.render.pod_renders import K3, RENDERS, render_id, rendered


def test_the_renders_hold_the_serving_pods_and_their_claim() -> None:
    # The rules below would pass on an empty render: each render that has a cluster set holds its claim's mounts.
    for name, sets in RENDERS:
        objects = rendered(name, sets)
        if load_profile(name).target != "kubernetes":
            continue
        (lws,) = [o for o in objects if o["kind"] == "LeaderWorkerSet"]
        specs = every_pod_spec(lws)
        assert len(specs) == 2, render_id((name, sets))
        if load_profile(name).kubernetes.host_vllm is not None:
            # A host_vllm rehearsal mounts its model folder instead: no claim, no prefetch Job.
            assert all(next(v for v in s["volumes"] if v["name"] == "model-cache").get("hostPath") for s in specs)
            assert not [o for o in objects if o["kind"] == "PersistentVolumeClaim"]
            continue
        claims = [v for spec in specs for v in spec["volumes"] if "persistentVolumeClaim" in v]
        assert claims and all("readOnly" not in v["persistentVolumeClaim"] for v in claims)


@pytest.mark.parametrize("render", RENDERS, ids=render_id)
def test_no_pod_names_one_claim_twice(render: tuple[str, tuple[str, ...]]) -> None:
    """Kubelets before 1.35 never finish mounting a pod whose volumes name one claim twice (kubernetes/kubernetes
    #127004; the fix, #122140, is first in v1.35.0-alpha.1), and preflight accepts 1.34."""
    offenders = {
        f"{obj['kind']}/{obj['metadata']['name']}": repeated
        for obj in rendered(*render)
        for spec in every_pod_spec(obj)
        if (repeated := repeated_claims(spec))
    }
    assert offenders == {}


@pytest.mark.parametrize("render", RENDERS, ids=render_id)
def test_the_weights_are_mounted_read_only_and_only_the_compile_cache_writes(
    render: tuple[str, tuple[str, ...]],
) -> None:
    name, sets = render
    profile = load_profile(name, list(sets))
    for obj in rendered(name, sets):
        if obj["kind"] != "LeaderWorkerSet":
            continue
        for spec in every_pod_spec(obj):
            claims = {v["name"] for v in spec["volumes"] if "persistentVolumeClaim" in v}
            hosts = {v["name"] for v in spec["volumes"] if "hostPath" in v}
            for container in spec.get("initContainers", []) + spec["containers"]:
                for mount in container.get("volumeMounts", []):
                    if mount["name"] in hosts:  # kubernetes.host_vllm: the nodes' folders, never written
                        assert mount["readOnly"] is True, container["name"]
                    if mount["name"] not in claims:
                        continue
                    if mount["mountPath"] == profile.kubernetes.model_cache_path:
                        assert mount["readOnly"] is True, container["name"]
                    else:
                        assert container["name"] == "vllm" and "subPathExpr" in mount, container["name"]
                        assert not mount.get("readOnly")


def test_a_patch_that_adds_a_second_volume_of_the_claim_is_seen() -> None:
    # The rule's own check sees the shape the set used to render (two volumes of one claim).
    spec = {
        "containers": [{"name": "vllm"}],
        "volumes": [
            {"name": "model-cache", "persistentVolumeClaim": {"claimName": f"{K3}-model-cache", "readOnly": True}},
            {"name": "compile-cache", "persistentVolumeClaim": {"claimName": f"{K3}-model-cache"}},
            {"name": "dshm", "emptyDir": {}},
        ],
    }
    assert repeated_claims(spec) == [f"{K3}-model-cache"]
    assert every_pod_spec({"spec": {"template": {"spec": spec}}}) == [spec]


@pytest.mark.parametrize("render", RENDERS, ids=render_id)
def test_every_container_of_the_serving_pods_runs_the_vllm_image(render: tuple[str, tuple[str, ...]]) -> None:
    """The serving path depends on no image but the one the pods pull anyway (an air-gapped rack mirrors vLLM's)."""
    name, sets = render
    profile = load_profile(name, list(sets))
    image = profile.vllm.image
    for obj in rendered(name, sets):
        if obj["kind"] == "LeaderWorkerSet":
            for spec in every_pod_spec(obj):
                containers = spec.get("initContainers", []) + spec["containers"]
                assert ("gpu-check" in {c["name"] for c in containers}) is profile.kubernetes.gpu_check
                assert {c["name"]: c["image"] for c in containers} == {c["name"]: image for c in containers}


@pytest.mark.parametrize("render", RENDERS, ids=render_id)
def test_no_job_of_a_render_expires(render: tuple[str, tuple[str, ...]]) -> None:
    """A rendered folder is what GitOps syncs: Flux re-creates a Job the TTL controller deleted on every reconcile."""
    jobs = [o for o in rendered(*render) if o["kind"] == "Job"]
    assert all("ttlSecondsAfterFinished" not in job["spec"] for job in jobs)
