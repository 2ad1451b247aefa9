"""Ready-detection latency: `k3deploy apply --wait` vs `kubectl wait --for=condition=Available`, same server, same run.

The test API server marks the LeaderWorkerSet Available; the bench stamps that moment inside the server's store
write itself (before any watcher can hear of it). Both tools wait on the same object at the same time; each one's
latency is the time from that stamp to (a) the line in which it reports the LWS ready and (b) its process
returning. After the LWS is ready `k3deploy apply` still applies the smoke Job and records the revision (two
more round trips), so (b) includes those; (a) is the like-for-like figure. Prints medians and ratios (k3deploy / kubectl); asserts nothing.

    python -m tests.bench.bench_ready_latency [--rounds 5] [--ready-delay 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.conftest import REPO_ROOT, cli_env, venv_tool
from tests.kubeapi.server import KubeApiServer

PROFILE = "kimi-k3-gb300-tp16"
NAMESPACE = "kimi-k3"
LWS = "kimi-k3-gb300-tp16"


def _available(obj: dict) -> bool:
    return any(
        c.get("type") == "Available" and c.get("status") == "True" for c in obj.get("status", {}).get("conditions", [])
    )


def _stamp_lines(stream, marker: str, stamps: dict[str, float], key: str) -> None:  # a text pipe
    for line in stream:
        if key not in stamps and marker in line:
            stamps[key] = time.monotonic()


def one_round(ready_delay: float, kubectl: str, workdir: Path) -> dict[str, float]:
    """One fresh server, both tools waiting; seconds from Available to each tool's report and return."""
    server = KubeApiServer().start(controllers=True)
    try:
        server.add_crds()
        server.add_gb300_nodes()
        server.add_storage_class(default=True)
        kubeconfig = server.write_kubeconfig(workdir / "kubeconfig")
        server.controllers.kubelet.ready_delay = ready_delay
        stamps: dict[str, float] = {}
        commit = server.store._commit

        def stamped_commit(rtype, obj, old, event, dry_run):  # the store's own signature
            # Stamp inside the write that makes it Available (under the store's lock, before any watcher hears of it).
            if rtype.plural == "leaderworkersets" and not dry_run and "available" not in stamps and _available(obj):
                stamps["available"] = time.monotonic()
            return commit(rtype, obj, old, event, dry_run)

        server.store._commit = stamped_commit  # type: ignore[method-assign]
        k3 = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "k3deploy",
                "apply",
                "-p",
                PROFILE,
                "--kubeconfig",
                str(kubeconfig),
                "--timeout",
                "120s",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
            cwd=REPO_ROOT,
        )
        assert k3.stderr is not None
        threading.Thread(
            target=_stamp_lines, args=(k3.stderr, f"LeaderWorkerSet/{LWS}: Available", stamps, "k3_seen"), daemon=True
        ).start()
        while server.store.get("leaderworkersets", LWS, NAMESPACE) is None:
            time.sleep(0.005)
        kc = subprocess.Popen(
            [
                kubectl,
                "--kubeconfig",
                str(kubeconfig),
                "wait",
                "--for=condition=Available",
                f"leaderworkerset/{LWS}",
                "-n",
                NAMESPACE,
                "--timeout=120s",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert kc.stdout is not None
        threading.Thread(
            target=_stamp_lines, args=(kc.stdout, "condition met", stamps, "kubectl_seen"), daemon=True
        ).start()
        while "available" not in stamps:
            time.sleep(0.01)
        kc.wait(timeout=120)
        stamps["kubectl_return"] = time.monotonic()
        k3.wait(timeout=120)
        stamps["k3_return"] = time.monotonic()
        if k3.returncode != 0 or kc.returncode != 0:
            raise RuntimeError(
                f"a tool failed: k3deploy {k3.returncode}, kubectl {kc.returncode}: {kc.stderr.read() if kc.stderr else ''}"
            )
        return {
            key: stamps[key] - stamps["available"] for key in ("k3_seen", "k3_return", "kubectl_seen", "kubectl_return")
        }
    finally:
        server.stop()


def main() -> None:
    """Run the rounds and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--ready-delay", type=float, default=3.0, help="Seconds the kubelet takes from Running to Ready."
    )
    args = parser.parse_args()
    kubectl = venv_tool("kubectl")
    if kubectl is None:
        sys.exit("kubectl not found (it is installed into the venv by .ci/setup)")
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(args.rounds):
            result = one_round(args.ready_delay, kubectl, Path(tmp))
            rounds.append(result)
            print(f"round {index + 1}: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in result.items()), flush=True)
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print(
        f"median ms after Available: k3deploy reports {median['k3_seen'] * 1000:.0f}, returns {median['k3_return'] * 1000:.0f}; "
        f"kubectl reports {median['kubectl_seen'] * 1000:.0f}, returns {median['kubectl_return'] * 1000:.0f}"
    )
    print(
        f"ratio k3deploy/kubectl, detection: {median['k3_seen'] / median['kubectl_seen']:.2f} "
        f"(goal <= 1.0); return: {median['k3_return'] / median['kubectl_return']:.2f} (includes applying the smoke Job and recording the revision)"
    )


if __name__ == "__main__":
    main()
