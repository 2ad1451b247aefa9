"""`up --smoke in-cluster`'s Jobs (targets/kubernetes/in_cluster.py): the rendered smoke Job, and the per-group gate's copy
named after the new group's leader and pointed at its cluster DNS name; the run itself is on the real plane
(tests/realk8s/test_forward.py)."""

from __future__ import annotations

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.targets.kubernetes.in_cluster import gate_job, pod_state, smoke_job, stuck

PROFILE = "kimi-k3-gb300-tp16"


def test_the_gate_job_smokes_the_new_leader_and_leaves_the_rendered_job_as_it_is() -> None:
    objects = [m.obj for m in build(load_profile(PROFILE, []))]
    job = smoke_job(objects)
    assert job is not None and job["metadata"]["name"] == f"{PROFILE}-smoke"
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--endpoint") + 1] == f"http://{PROFILE}-api.kimi-k3.svc:8000"
    assert args[-2:] == ["-o", "json"]  # the log ends with the report the verdict is read from

    gate = gate_job(job, f"{PROFILE}-green", 0, 8000)
    assert gate["metadata"]["name"] == f"{PROFILE}-green-0-smoke"
    gate_args = gate["spec"]["template"]["spec"]["containers"][0]["args"]
    assert gate_args[gate_args.index("--endpoint") + 1] == f"http://{PROFILE}-green-0.{PROFILE}-green.kimi-k3.svc:8000"
    # It judges only its leader: the rendered Job's gating of every unlabelled leader is left out (`up` labels it).
    assert "--gate-leaders" in args and "--gate-leaders" not in gate_args
    assert [a for a in gate_args if a != gate_args[gate_args.index("--endpoint") + 1]] == [
        a for a in args if a not in (args[args.index("--endpoint") + 1], "--gate-leaders")
    ]
    assert args[args.index("--endpoint") + 1] == f"http://{PROFILE}-api.kimi-k3.svc:8000"  # a copy, not the original
    assert smoke_job([o for o in objects if o is not job]) is None


def _pod(*states: dict, init: tuple[dict, ...] = (), phase: str = "Pending") -> dict:
    named = [{"name": f"c{i}", "state": s} for i, s in enumerate(states)]
    return {"status": {"phase": phase, "containerStatuses": named, "initContainerStatuses": list(init)}}


def test_a_container_waiting_for_what_waiting_does_not_clear_is_stuck_with_its_reason() -> None:
    """As the kubelet reports them (pkg/kubelet/images, kuberuntime): before, the wait went on to the Job's own
    deadline (11,400 s) with no line."""
    pull = {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "x/y:1"'}}
    assert stuck(_pod(pull)) == 'container c0 ImagePullBackOff: Back-off pulling image "x/y:1"'
    assert stuck(_pod({"waiting": {"reason": "ErrImagePull"}})) == "container c0 ErrImagePull"
    config = {"name": "init", "state": {"waiting": {"reason": "CreateContainerConfigError", "message": "no key"}}}
    assert stuck(_pod({"waiting": {"reason": "PodInitializing"}}, init=(config,))) == (
        "container init CreateContainerConfigError: no key"
    )
    for passing in ("ContainerCreating", "PodInitializing", "CrashLoopBackOff"):
        assert stuck(_pod({"waiting": {"reason": passing}})) is None
    assert stuck(_pod({"running": {}}, phase="Running")) is None
    assert stuck({}) is None


def test_the_pod_state_says_why_a_container_waits() -> None:
    assert pod_state(_pod({"waiting": {"reason": "ContainerCreating"}})) == "Pending (ContainerCreating)"
    assert pod_state(_pod({"running": {}}, phase="Running")) == "Running"
    assert pod_state({}) == "Pending"
