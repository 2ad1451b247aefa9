"""`python -m tests.realk8s --kubeconfig PATH [--gb300-nodes N] [--cliques C | --racks R [--trays-per-rack T]]
[--cpu-nodes K] [--real-nodes R] [--forward-pod-port PORT=HOST:PORT] [--kueue]`: start a real control plane with N GB300
nodes in C NVLink cliques (or R NVL72 racks of T trays, each rack one clique), K CPU nodes and R real
kubelet nodes (containerd and a kubelet each, tainted `realk8s.k3deploy/real-node`), optionally a real Kueue with the
objects an operator creates for k3deploy (tests/realk8s/kueue.py), optionally forward PORT of every serving leader pod
to HOST:PORT on this machine (KWOK PortForward objects), write an admin kubeconfig to PATH, print `READY <url>`, stop
on SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from tests.realk8s import kueue
from tests.realk8s.binaries import BinariesMissing, find_binaries, node_tools
from tests.realk8s.forwards import ForwardSpec, LeaderForwards
from tests.realk8s.plane import Plane, PlaneOptions
from tests.realk8s.standins import STANDIN_IMAGES
from tests.support import crds


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.realk8s", description=__doc__)
    parser.add_argument("--kubeconfig", required=True, type=Path, help="where to write the admin kubeconfig")
    parser.add_argument("--gb300-nodes", type=int, default=8, help="GB300 nodes (default 8)")
    parser.add_argument("--cliques", type=int, default=2, help="NVLink cliques the nodes are spread over (default 2)")
    parser.add_argument(
        "--racks",
        type=int,
        default=0,
        help="NVL72 racks, each one clique of --trays-per-rack GB300 trays (replaces --gb300-nodes and --cliques)",
    )
    parser.add_argument("--trays-per-rack", type=int, default=18, help="GB300 trays per rack (default 18)")
    parser.add_argument("--cpu-nodes", type=int, default=2, help="CPU (system) nodes (default 2)")
    parser.add_argument(
        "--real-nodes",
        type=int,
        default=0,
        help="real kubelet nodes beside the KWOK ones, tainted and labelled realk8s.k3deploy/real-node (default 0)",
    )
    parser.add_argument(
        "--forward-pod-port",
        action="append",
        default=[],
        metavar="PORT=HOST:PORT",
        help="serve PORT of every serving leader pod by HOST:PORT on this machine (port-forwards through the API "
        "server reach it), e.g. 8000=127.0.0.1:8000; repeatable",
    )
    parser.add_argument(
        "--kueue",
        action="store_true",
        help="also run a real Kueue (built by .ci/build-kueue) with a Topology on the clique label, a ResourceFlavor, "
        "a ClusterQueue holding every GB300 GPU and the LocalQueue k3deploy in namespace kimi-k3",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the plane until a signal; exit 0 then, 2 on bad usage, 3 when the binaries or the CRDs are missing."""
    args = _parser().parse_args(argv)
    if args.gb300_nodes < 1 or args.cliques < 1 or args.cliques > args.gb300_nodes:
        print("error: --gb300-nodes and --cliques must be >= 1, with no more cliques than nodes", file=sys.stderr)
        print("hint: e.g. --gb300-nodes 8 --cliques 2", file=sys.stderr)
        return 2
    if args.racks < 0 or args.trays_per_rack < 1 or args.cpu_nodes < 0:
        print("error: --racks and --cpu-nodes must be >= 0 and --trays-per-rack >= 1", file=sys.stderr)
        print("hint: e.g. --racks 4 --trays-per-rack 18 --cpu-nodes 3", file=sys.stderr)
        return 2
    if args.real_nodes < 0:
        print("error: --real-nodes must be >= 0", file=sys.stderr)
        print("hint: e.g. --real-nodes 1", file=sys.stderr)
        return 2
    try:
        forwards = [ForwardSpec.parse(text) for text in args.forward_pod_port]
    except ValueError as exc:
        print(f"error: --forward-pod-port {exc}", file=sys.stderr)
        print("hint: e.g. --forward-pod-port 8000=127.0.0.1:8000", file=sys.stderr)
        return 2
    try:
        crds.find()
    except crds.CrdsMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("hint: bash .ci/fetch-crds fetches them from the Go modules of their pinned versions", file=sys.stderr)
        return 3
    try:
        binaries = find_binaries()
        if args.real_nodes:
            node_tools(binaries)
        queue = kueue.find_kueue() if args.kueue else None
    except BinariesMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("hint: bash .ci/build-realk8s && bash .ci/realnodes && bash .ci/build-kueue", file=sys.stderr)
        return 3
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    options = PlaneOptions(
        gb300_nodes=args.gb300_nodes,
        cliques=args.cliques,
        cpu_nodes=args.cpu_nodes,
        racks=args.racks,
        trays_per_rack=args.trays_per_rack,
        kueue=queue,
    )
    plane = Plane(binaries, options)
    leaders: LeaderForwards | None = None
    try:
        plane.start()
        if queue is not None:
            trays = args.racks * args.trays_per_rack if args.racks else args.gb300_nodes
            kueue.apply_objects(plane.api, kueue.operator_objects(gpus=4 * trays))
        for _ in range(args.real_nodes):
            plane.add_real_node(images=STANDIN_IMAGES)
        if forwards:
            leaders = LeaderForwards(plane.api, forwards).start()
        plane.kubeconfig(args.kubeconfig)
        print(f"READY {plane.url}", flush=True)
        stop.wait()
    finally:
        if leaders is not None:
            leaders.stop()
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
