"""`status` and `watch --groups` on the real plane: the GB300 set applied by the real LWS controller on KWOK trays,
then a fault condition (NVSentinel's GpuNvlinkWatch) on a tray under group 0: both show that tray sick, with why,
and the group's other trays healthy; the plane runs no DRA driver, so no ComputeDomain is shown."""

from __future__ import annotations

import json

import pytest

from tests.observe.test_watch_cli import AFTER, BEFORE
from tests.observe.watch_servers import MetricsScript, serve
from tests.realk8s.cluster_fixtures import Deployment
from tests.realk8s.test_guard import FAULT, LWS, applied, set_fault

pytestmark = [pytest.mark.realk8s, pytest.mark.timeout(600)]


def test_status_and_watch_show_each_trays_health_per_group(deploy: Deployment) -> None:
    before = applied(deploy)
    trays = sorted(p["spec"]["nodeName"] for p in before.values())
    sick = next(p["spec"]["nodeName"] for n, p in before.items() if n != LWS + "-0")
    set_fault(deploy, sick)
    why = f"{FAULT}: GpuNvlinkWatchIsNotHealthy: GPU 2 NVLink 7 down"

    status = deploy.k3("status", "-o", "json")
    assert status.returncode in (0, 1), status.stderr
    groups = {g["group"]: g for g in json.loads(status.stdout)["groups"]}
    assert groups["0"]["compute_domain"] is None
    health = {t["node"]: (t["health"], t["faults"]) for t in groups["0"]["trays"]}
    assert sorted(health) == trays
    assert health[sick] == ("sick", [why])
    assert all(h == ("healthy", []) for node, h in health.items() if node != sick)

    shown = deploy.k3("status")
    assert f"{sick} sick ({why})" in shown.stdout + shown.stderr

    with serve(MetricsScript([BEFORE, AFTER])) as url:
        watched = deploy.k3("watch", "--groups", "--endpoint", url, "--interval", "0.2s", "--count", "1", "-o", "json")
    assert watched.returncode == 0, watched.stderr
    [line] = [json.loads(x) for x in watched.stdout.splitlines() if x.strip()]
    assert line["groups_error"] is None
    [row] = [g for g in line["groups"] if g["group"] == "0"]
    assert {t["node"]: t["health"] for t in row["trays"]}[sick] == "sick"
