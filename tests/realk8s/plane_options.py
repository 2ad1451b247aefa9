"""What a plane starts with (tests/realk8s/plane.py): GB300 nodes in cliques or NVL72 racks, CPU nodes, its folder,
an optional real Kueue and the users whose requests the API server's audit log records."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.realk8s import objects
from tests.realk8s.kueue import KueueBuild


@dataclass
class PlaneOptions:
    """What to start: GB300 node count and NVLink cliques (or `racks` NVL72 racks of `trays_per_rack` trays, each
    rack one clique, which then replace both), CPU (system) nodes, the users whose requests the API server's audit
    log records (none: no audit log), and where the plane's files go."""

    gb300_nodes: int = 8
    cliques: int = 2
    cpu_nodes: int = 2
    workdir: Path | None = None
    #: A real Kueue (tests/realk8s/kueue.py) started with the plane, with the objects an operator creates.
    kueue: KueueBuild | None = None
    racks: int = 0
    trays_per_rack: int = 18
    audit_users: tuple[str, ...] = ()

    def gb300(self, k8s_version: str) -> list[dict[str, Any]]:
        """The GB300 nodes to create: racks of trays when `racks` is set, else `gb300_nodes` over `cliques`."""
        if self.racks:
            return objects.nvl72_racks(self.racks, self.trays_per_rack, k8s_version)
        return objects.gb300_nodes(self.gb300_nodes, self.cliques, k8s_version)
