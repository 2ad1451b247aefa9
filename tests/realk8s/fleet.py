"""A fleet of NVL72 racks on a real plane, and the k3deploy commands whose cost is measured on it (the bench script
tests/bench/bench_fleet.py and the bounds of tests/realk8s/test_fleet_cost.py run the same steps).

Each rack is one NVLink clique of 18 GB300 trays; a serving group (TP16) takes 4 trays of one clique, so a rack holds
4 groups. A fleet of R racks is measured with the release size the issue names for it (2, 8, 16, 32 groups at
R = 2, 4, 8, 16): as many as fit, never more.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.observe.test_watch_cli import AFTER, BEFORE
from tests.observe.watch_servers import MetricsScript, serve
from tests.realk8s.binaries import Binaries
from tests.realk8s.cluster_fixtures import NEW_IMAGE, NO_DRA, PROFILE, QUICK
from tests.realk8s.cost import USER, Cost, kubeconfig, measure
from tests.realk8s.plane import Plane, PlaneOptions

TRAYS_PER_RACK = 18
TRAYS_PER_GROUP = 4
CPU_NODES = 3
#: Groups of the release measured on R racks.
REPLICAS = {2: 2, 4: 8, 8: 16, 16: 32}


def replicas_for(racks: int) -> int:
    """The groups measured on `racks` racks: the issue's figure, capped by what the cliques hold."""
    fit = racks * (TRAYS_PER_RACK // TRAYS_PER_GROUP)
    return min(REPLICAS.get(racks, fit), fit)


def fleet_plane(binaries: Binaries, racks: int, workdir: Path | None = None) -> Plane:
    """A plane (not started) of `racks` racks and the CPU nodes, auditing the measured user's requests."""
    options = PlaneOptions(
        racks=racks, trays_per_rack=TRAYS_PER_RACK, cpu_nodes=CPU_NODES, audit_users=(USER,), workdir=workdir
    )
    return Plane(binaries, options)


@dataclass
class Fleet:
    """One release on a fleet plane: `run(command, *args)` measures `k3deploy COMMAND` against it."""

    plane: Plane
    namespace: str
    replicas: int
    directory: Path

    def run(self, command: str, *args: str, timeout_s: float = 900) -> Cost:
        """`k3deploy COMMAND -p PROFILE --kubeconfig BENCH -n NS NO_DRA --set parallel.replicas=N ARGS`, measured."""
        config = kubeconfig(self.plane, self.directory)
        common = ("-p", PROFILE, "--kubeconfig", str(config), "-n", self.namespace, *NO_DRA)
        size = ("--set", f"parallel.replicas={self.replicas}")
        return measure(self.plane, command, *common, *size, *args, timeout_s=timeout_s)


#: `watch --groups` one JSON line per interval, an interval short enough that the plane's reads dominate.
WATCH = ("--groups", "--interval", "0.5s", "-o", "json")


@contextlib.contextmanager
def watch_endpoint(command: str) -> Iterator[tuple[str, ...]]:
    """The extra args a step needs while it runs: `--endpoint URL` of a scripted vLLM /metrics for `watch` (the
    recorded scrapes of tests/observe/data), nothing for the other commands."""
    if command != "watch":
        yield ()
        return
    with serve(MetricsScript([BEFORE, AFTER])) as url:
        yield ("--endpoint", url)


#: The measured steps, in order: name -> (command, args). `up` is the first install without the smoke gates
#: (QUICK); `roll` is a template change rolled through every group one at a time.
STEPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "preflight": ("preflight", ("--cluster",)),
    "plan --cluster": ("plan", ("--cluster",)),
    "up": ("up", (*QUICK, "--timeout", "900s")),
    "status": ("status", ()),
    # One interval of `watch --groups` is `watch x5` less `watch x1`, over four: the metrics come from a scripted
    # /metrics on loopback (`--endpoint` is added where the step runs, `watch_endpoint`), the groups from the plane.
    "watch x1": ("watch", (*WATCH, "--count", "1")),
    "watch x5": ("watch", (*WATCH, "--count", "5")),
    "roll": ("up", (*QUICK, *NEW_IMAGE, "--timeout", "900s")),
    "down": ("down", ("--yes", "--purge", "--timeout", "300s")),
}
