"""`k3deploy smoke --gate-leaders`: what the smoke Job does first under GitOps (its PostSync run after a sync, and
`up --smoke in-cluster`'s final run): every leader the API Service does not select yet is gated through itself and
labelled when it passes (k3deploy/traffic_gate.py), before the Service is smoked.

Each leader waits for Ready (up to smoke.ready_timeout_s, the Job's --wait-ready), then is smoked by its own address
(the LeaderWorkerSet's headless Service name, `<lws>-<group>.<lws>.<namespace>.svc`; a `--group-endpoint` template
instead), never through the API Service, which does not select it; a pass labels that pod (its uid a precondition).
One that runs a template revision a gate already passed on is labelled without a smoke with `smoke.gate_restarts:
false`. The Job's own ServiceAccount may list, read and label pods and read the LeaderWorkerSet (and record on it
the revision that passed, with gate_restarts off): templates/smoke-role.yaml.j2.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from k3deploy.errors import K3DeployError
from k3deploy.kube.port import KubePort
from k3deploy.lws import API_VERSION, colours
from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult, Status
from k3deploy.reporter import Reporter
from k3deploy.rollout.groups import group_endpoint
from k3deploy.targets.kubernetes import marks
from k3deploy.targets.kubernetes.poll import poll, time_left

#: Seconds between two looks at the leaders while they load.
POLL_S = 5.0
#: A smoke of one URL, judged by the caller (the `smoke` command runs and judges it; no target module reads a smoke
#: report): None when it passed, else why not.
Smoke = Callable[[Profile, str], str | None]


def _wait_leaders(api: KubePort, namespace: str, groups: dict[str, int], wait_s: float) -> None:
    """Until every group of each LeaderWorkerSet has a Ready leader, or `wait_s` is spent (the rest go ungated)."""

    def all_ready() -> bool | None:
        ready = sum(len(marks.ready_leaders(api, namespace, name)) for name in groups)
        return True if ready >= sum(groups.values()) else None

    poll(all_ready, time_left(time.monotonic() + wait_s), POLL_S)


def gate_from_inside(
    api: KubePort,
    profile: Profile,
    smoke: Smoke,
    reporter: Reporter,
    template: str | None = None,
) -> list[CheckResult]:
    """Gate every unlabelled leader of the release (either colour); one check per leader gated: PASS when it was
    labelled, FAIL when its smoke failed (it stays out of traffic)."""
    namespace, port = profile.kubernetes.namespace, profile.vllm.port
    groups: dict[str, int] = {}
    for name in colours(profile.name):
        live = api.get(API_VERSION, "LeaderWorkerSet", name, namespace)
        if live is not None:
            groups[name] = int((live.get("spec") or {}).get("replicas", 1))
    _wait_leaders(api, namespace, groups, float(profile.smoke.ready_timeout_s or 0))
    checks: list[CheckResult] = []
    record = not profile.smoke.gate_restarts
    for name in groups:
        for leader in marks.unmarked(api, namespace, name, profile.smoke.gate_restarts):
            check = f"gate {leader.pod}"
            if leader.copy:
                why = "a restart of a template its gate passed on"
                marks.mark(api, namespace, name, leader.group, leader.uid, reporter, record_revision=record, why=why)
                checks.append(CheckResult(name=check, status=Status.PASS, detail=f"labelled without a smoke: {why}"))
                continue
            url = group_endpoint(template, name, namespace, leader.group, port)
            reporter.note(f"gate: smoke of {leader.pod} at {url} (not in traffic yet)")
            failed = smoke(profile, url)
            if failed is not None:
                detail = f"smoke at {url} failed: {failed}; it stays out of traffic"
                checks.append(CheckResult(name=check, status=Status.FAIL, detail=detail))
                continue
            try:
                marks.mark(api, namespace, name, leader.group, leader.uid, reporter, record_revision=record)
            except K3DeployError as exc:
                checks.append(CheckResult(name=check, status=Status.FAIL, detail=exc.message, hint=exc.hint))
                continue
            checks.append(CheckResult(name=check, status=Status.PASS, detail=f"smoke at {url} passed: labelled"))
    return checks
