"""`python -m tests.realk8s --kubeconfig PATH [--gb300-nodes N] [--cliques C]`: start a real control plane with N
GB300 nodes in C NVLink cliques, write an admin kubeconfig to PATH, print `READY <url>`, stop on SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from tests.realk8s.binaries import BinariesMissing, find_binaries
from tests.realk8s.plane import Plane, PlaneOptions


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.realk8s", description=__doc__)
    parser.add_argument("--kubeconfig", required=True, type=Path, help="where to write the admin kubeconfig")
    parser.add_argument("--gb300-nodes", type=int, default=8, help="GB300 nodes (default 8)")
    parser.add_argument("--cliques", type=int, default=2, help="NVLink cliques the nodes are spread over (default 2)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the plane until a signal; exit 0 then, 2 on bad usage, 3 when the binaries are missing."""
    args = _parser().parse_args(argv)
    if args.gb300_nodes < 1 or args.cliques < 1 or args.cliques > args.gb300_nodes:
        print("error: --gb300-nodes and --cliques must be >= 1, with no more cliques than nodes", file=sys.stderr)
        print("hint: e.g. --gb300-nodes 8 --cliques 2", file=sys.stderr)
        return 2
    try:
        binaries = find_binaries()
    except BinariesMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        print("hint: bash .ci/build-realk8s", file=sys.stderr)
        return 3
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    plane = Plane(binaries, PlaneOptions(gb300_nodes=args.gb300_nodes, cliques=args.cliques))
    try:
        plane.start()
        plane.kubeconfig(args.kubeconfig)
        print(f"READY {plane.url}", flush=True)
        stop.wait()
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
