"""Ready-detection latency: `k3deploy apply` vs `kubectl wait --for=condition=Available`, on the real control plane
(tests/realk8s: kube-apiserver, the real LWS controller, KWOK making the pods Ready), same LWS, same run.

Each round deploys the GB300 profile into a fresh namespace. The bench holds its own watch on the LeaderWorkerSet,
opened before either tool starts, and stamps the moment that watch delivers the event in which the real controller
set Available=True: the earliest any client on this machine can know it. Both tools wait on the same object at the
same time; each one's latency is the time from that stamp to (a) the line in which it reports the LWS ready and (b)
its process returning. After the LWS is ready `k3deploy apply` still applies the smoke Job and records the revision
(more round trips), so (b) includes those; (a) is the like-for-like figure. Prints the medians, the detection
difference (k3deploy - kubectl) and the return ratio (k3deploy / kubectl); asserts nothing.

    python -m tests.bench.bench_ready_latency [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import IO

import httpx

from tests.conftest import REPO_ROOT, cli_env, venv_tool
from tests.realk8s.binaries import BinariesMissing, find_binaries
from tests.realk8s.client import resource_path, wait_until
from tests.realk8s.plane import Plane, PlaneOptions

PROFILE = "kimi-k3-gb300-tp16"
LWS = "kimi-k3-gb300-tp16"
LWS_API = "leaderworkerset.x-k8s.io/v1"
#: Longest a round may take (a TP16 group on 4 trays, the Jobs completed by the real Job controller).
ROUND_S = 240


def _available(obj: dict) -> bool:
    return any(
        c.get("type") == "Available" and c.get("status") == "True" for c in obj.get("status", {}).get("conditions", [])
    )


def _stamp_lines(stream: IO[str], marker: str, stamps: dict[str, float], key: str) -> None:
    for line in stream:
        if key not in stamps and marker in line:
            stamps[key] = time.monotonic()


def _watch_available(plane: Plane, namespace: str, stamps: dict[str, float], opened: threading.Event) -> None:
    """Stamp `available` when the bench's own watch of the LWS delivers Available=True."""
    path = resource_path(LWS_API, "leaderworkersets", namespace)
    params = {"watch": "true", "fieldSelector": f"metadata.name={LWS}", "timeoutSeconds": str(ROUND_S)}
    headers = {"Authorization": f"Bearer {plane.tokens['realk8s-admin']}"}
    with (
        httpx.Client(base_url=plane.url, verify=str(plane.ca_file), headers=headers, timeout=ROUND_S + 10) as http,
        http.stream("GET", path, params=params) as response,
    ):
        opened.set()
        for line in response.iter_lines():
            if line and _available(json.loads(line).get("object") or {}):
                stamps["available"] = time.monotonic()
                return


def one_round(plane: Plane, kubectl: str, kubeconfig: Path) -> dict[str, float]:
    """One fresh namespace, both tools waiting; seconds from Available to each tool's report and return."""
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    api = plane.api
    api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    stamps: dict[str, float] = {}
    try:
        opened = threading.Event()
        watcher = threading.Thread(target=_watch_available, args=(plane, namespace, stamps, opened), daemon=True)
        watcher.start()
        opened.wait(30)
        command = [sys.executable, "-m", "k3deploy", "apply", "-p", PROFILE, "--kubeconfig", str(kubeconfig)]
        command += ["-n", namespace, "--set", "kubernetes.compute_domain=false", "--timeout", f"{ROUND_S}s"]
        k3 = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=cli_env(), cwd=REPO_ROOT
        )
        assert k3.stderr is not None
        k3_lines: list[str] = []

        def k3_stderr(stream: IO[str]) -> None:
            for line in stream:
                k3_lines.append(line)
                if "k3_seen" not in stamps and f"LeaderWorkerSet/{LWS}: Available" in line:
                    stamps["k3_seen"] = time.monotonic()

        threading.Thread(target=k3_stderr, args=(k3.stderr,), daemon=True).start()
        lws_path = resource_path(LWS_API, "leaderworkersets", namespace, LWS)
        wait_until("k3deploy to create the LeaderWorkerSet", lambda: api.find(lws_path), ROUND_S, interval_s=0.01)
        wait = [kubectl, "--kubeconfig", str(kubeconfig), "wait", "--for=condition=Available", f"leaderworkerset/{LWS}"]
        kc = subprocess.Popen(
            [*wait, "-n", namespace, f"--timeout={ROUND_S}s"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert kc.stdout is not None
        threading.Thread(
            target=_stamp_lines, args=(kc.stdout, "condition met", stamps, "kubectl_seen"), daemon=True
        ).start()
        kc.wait(timeout=ROUND_S + 30)
        stamps["kubectl_return"] = time.monotonic()
        k3.wait(timeout=ROUND_S + 30)
        stamps["k3_return"] = time.monotonic()
        watcher.join(10)
        if k3.returncode != 0 or kc.returncode != 0 or not {"available", "k3_seen", "kubectl_seen"} <= set(stamps):
            raise RuntimeError(
                f"a round failed: k3deploy {k3.returncode}, kubectl {kc.returncode}, stamps {sorted(stamps)}: "
                f"{''.join(k3_lines[-5:])}{kc.stderr.read() if kc.stderr else ''}"
            )
        return {
            key: stamps[key] - stamps["available"] for key in ("k3_seen", "k3_return", "kubectl_seen", "kubectl_return")
        }
    finally:
        # The next round needs the four trays: wait until this round's pods are gone.
        api.delete(f"/api/v1/namespaces/{namespace}")
        wait_until(
            f"the pods of {namespace} to be deleted",
            lambda: not api.get(resource_path("v1", "pods", namespace))["items"],
            180,
            interval_s=0.5,
        )


def main() -> None:
    """Start the plane, run the rounds and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    kubectl = venv_tool("kubectl")
    if kubectl is None:
        sys.exit("kubectl not found (it is installed into the venv by .ci/setup)")
    try:
        binaries = find_binaries()
    except BinariesMissing as exc:
        sys.exit(str(exc))
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp) / "plane"
        workdir.mkdir()
        with Plane(binaries, PlaneOptions(gb300_nodes=4, cliques=1, cpu_nodes=1, workdir=workdir)) as plane:
            kubeconfig = plane.kubeconfig(Path(tmp) / "admin.kubeconfig")
            for index in range(args.rounds):
                result = one_round(plane, kubectl, kubeconfig)
                rounds.append(result)
                print(
                    f"round {index + 1}: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in result.items()), flush=True
                )
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print(
        f"median ms after Available: k3deploy reports {median['k3_seen'] * 1000:.0f}, returns {median['k3_return'] * 1000:.0f}; "
        f"kubectl reports {median['kubectl_seen'] * 1000:.0f}, returns {median['kubectl_return'] * 1000:.0f}"
    )
    # Both tools hear the controller's write through a watch as the bench does, so detection is a few ms either way
    # and a ratio of two near-zero figures says nothing: the difference does (goal <= 0, within the noise).
    print(
        f"detection, k3deploy - kubectl: {(median['k3_seen'] - median['kubectl_seen']) * 1000:+.0f} ms (goal <= 0); "
        f"return ratio k3deploy/kubectl: {median['k3_return'] / median['kubectl_return']:.2f} "
        "(includes applying the smoke Job and recording the revision)"
    )


if __name__ == "__main__":
    main()
