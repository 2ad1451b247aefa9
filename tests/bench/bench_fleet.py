"""Fleet scale: what each k3deploy command costs as the fleet grows from 2 to 16 NVL72 racks (36 to 288 GB300 trays)
and the release from 2 to 32 serving groups. Prints the figures and each one's ratio to the first row; asserts
nothing (the request-count bounds are asserted by tests/realk8s/test_fleet_cost.py).

For each R a real plane of R racks (tests/realk8s/fleet.py) is started, and `preflight --cluster`, `plan --cluster`,
`up` (first install, `--skip-smoke`), `status`, `watch --groups` for 1 and for 5 intervals (one interval costs
the difference over four), a rolling template change (`up` with a new image) and `down --purge`
run against it in turn as a process of their own. Requests are the API server's audit log's count of the CLI's own
user (the server's record; its `apiserver_request_total` carries no user, so its delta would also count the
controllers); CPU is user + system of the process and RSS its peak, both from `os.wait4`.

    python -m tests.bench.bench_fleet [--racks 2,4,8,16] [--steps preflight,status]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

from tests.realk8s.binaries import find_binaries
from tests.realk8s.cost import Cost
from tests.realk8s.fleet import STEPS, TRAYS_PER_RACK, Fleet, fleet_plane, replicas_for, watch_endpoint


def _measure(racks: int, steps: list[str], workdir: Path) -> dict[str, Cost]:
    costs: dict[str, Cost] = {}
    with fleet_plane(find_binaries(), racks, workdir / "plane") as plane:
        fleet = Fleet(plane, f"fleet-{uuid.uuid4().hex[:6]}", replicas_for(racks), workdir)
        for name in steps:
            command, args = STEPS[name]
            with watch_endpoint(command) as extra:
                cost = fleet.run(command, *args, *extra)
            costs[name] = cost
            print(
                f"  R={racks} {name}: exit {cost.returncode}, {cost.total} requests, {cost.wall_s:.1f}s",
                file=sys.stderr,
                flush=True,
            )
            if cost.returncode == 1:  # a check failed: say which (preflight's FAIL rows)
                failed = [line.strip() for line in cost.stdout.splitlines() if "FAIL" in line]
                print("\n".join(f"    {line}" for line in failed[:10]), file=sys.stderr)
            elif cost.returncode != 0:
                print(cost.stderr[-2000:], file=sys.stderr)
    return costs


def _verbs(cost: Cost) -> str:
    return " ".join(f"{verb}={n}" for verb, n in sorted(cost.by_verb().items()))


def table(rows: dict[int, dict[str, Cost]]) -> str:
    """A markdown table: one line per (step, R) with requests, wall, CPU, RSS and each one's ratio to the first R."""
    first = min(rows)
    lines = [
        "| step | racks | trays | groups | requests (x) | by verb | wall s (x) | CPU s (x) | peak RSS MiB | exit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in STEPS:
        for racks, costs in sorted(rows.items()):
            if name not in costs:
                continue
            cost, base = costs[name], rows[first].get(name)

            def ratio(value: float, of: float | None) -> str:
                return f" ({value / of:.1f}x)" if of else ""

            lines.append(
                f"| {name} | {racks} | {racks * TRAYS_PER_RACK} | {replicas_for(racks)} "
                f"| {cost.total}{ratio(cost.total, base and base.total)} | {_verbs(cost)} "
                f"| {cost.wall_s:.1f}{ratio(cost.wall_s, base and base.wall_s)} "
                f"| {cost.cpu_s:.2f}{ratio(cost.cpu_s, base and base.cpu_s)} | {cost.rss_mib:.0f} | {cost.returncode} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure each R in turn and print the table (and, with --detail, every (verb, resource) count)."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_fleet", description=__doc__)
    parser.add_argument("--racks", default="2,4,8,16", help="comma-separated rack counts (default 2,4,8,16)")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"comma-separated steps (default {','.join(STEPS)})")
    parser.add_argument("--detail", action="store_true", help="also print each step's requests by verb and resource")
    args = parser.parse_args(argv)
    racks = [int(r) for r in args.racks.split(",")]
    steps = [s.strip() for s in args.steps.split(",")]
    unknown = [s for s in steps if s not in STEPS]
    if unknown or any(r < 1 for r in racks):
        print(f"error: unknown steps {unknown} or a rack count below 1", file=sys.stderr)
        print(f"hint: --racks 2,4 --steps {','.join(STEPS)}", file=sys.stderr)
        return 2
    rows: dict[int, dict[str, Cost]] = {}
    for r in racks:
        with tempfile.TemporaryDirectory(prefix="bench-fleet-") as directory:
            rows[r] = _measure(r, steps, Path(directory))
        print(table(rows), file=sys.stderr, flush=True)  # the rows so far, should a later R not finish
        if args.detail:
            for name, cost in rows[r].items():
                detail = ", ".join(f"{v} {res}={n}" for (v, res), n in sorted(cost.requests.items()))
                print(f"R={r} {name}: {detail}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
