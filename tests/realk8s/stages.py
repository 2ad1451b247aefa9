"""The KWOK Stages of the realk8s plane's fault cases, each keyed by a container image (or a gate annotation): an
image that never pulls, one that crash-loops with a rising restart count, a Job pod that fails, a container that exits
1, one that runs but never gets Ready, one that takes a while to start (a large image pulled), and pods with resource
claims held ContainerCreating until the DRA stand-in opens their IMEX gate.

KWOK picks among matching Stages by weight (sigs.k8s.io/kwok pkg/kwok/controllers/stage_controller.go); its own
have weight 0, so each of these wins wherever it matches. A Stage keeps matching once applied (the same status again
is no change), so KWOK's pod-ready never turns such a pod Ready. The status templates are KWOK's Go templates
(kustomize/stage/pod/general/pod-ready.yaml is the one they vary).
"""

from __future__ import annotations

from typing import Any

#: A pod with a container of this image never pulls it (ImagePullBackOff).
PULL_FAILS_IMAGE = "registry.invalid/realk8s/no-such-image:pull-fails"
#: A pod with a container of this image crash-loops: every second a restart more, CrashLoopBackOff, last exit 1.
CRASH_LOOP_IMAGE = "registry.invalid/realk8s/crashes:exit-1"
#: A Job's pod with a container of this image ends Failed, exit 1, where KWOK's own `pod-complete` would succeed.
JOB_FAILS_IMAGE = "registry.invalid/realk8s/job-fails:exit-1"
#: A pod with a container of this image fails: phase Failed, the container terminated with exit code 1.
EXITS_IMAGE = "registry.invalid/realk8s/exits:exit-1"
#: A pod with a container of this image runs and is never Ready (its readiness probe never passes).
NEVER_READY_IMAGE = "registry.invalid/realk8s/never-ready:probe-fails"
#: A pod with a container of this image stays ContainerCreating for SLOW_READY_S, then runs Ready (a large image).
SLOW_READY_IMAGE = "registry.invalid/realk8s/slow:ready-after-20s"
SLOW_READY_S = 20
#: An ordinary image for the prefetch Job while a test gives the serving pods a fault image: the prefetch runs
#: vllm.image by default, so the fault would hit it first.
PREFETCH_IMAGE = "vllm/vllm-openai:kimi-k3"


def serving_image(image: str) -> tuple[str, ...]:
    """`--set`s that give only the serving pods `image` (the prefetch keeps PREFETCH_IMAGE)."""
    return ("--set", f"vllm.image={image}", "--set", f"kubernetes.prefetch_image={PREFETCH_IMAGE}")


#: Set by the DRA driver stand-in (tests/realk8s/dra.py) once a pod's IMEX channels are ready.
IMEX_READY_ANNOTATION = "realk8s.k3deploy/imex-channels-ready"

_ADDRESSES = """\
hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) \
( or .metadata.namespace "" ) | Quote }}
"""


def _conditions(ready: bool, reason: str = "", at: str = "$now") -> str:
    value = '"True"' if ready else '"False"'
    why = f", reason: {reason}" if reason else ""
    return (
        "conditions:\n"
        f'- {{type: Initialized, status: "True", lastTransitionTime: {{{{ {at} | Quote }}}}}}\n'
        f"- {{type: Ready, status: {value}{why}, lastTransitionTime: {{{{ {at} | Quote }}}}}}\n"
        f"- {{type: ContainersReady, status: {value}{why}, lastTransitionTime: {{{{ {at} | Quote }}}}}}\n"
    )


def _containers(ready: bool, started: bool, restarts: str, state: str, last_state: str = "") -> str:
    """Every container of the pod with the same status; `state` and `last_state` are one YAML flow line each."""
    last = f"  lastState:\n    {last_state}\n" if last_state else ""
    return (
        "containerStatuses:\n"
        "{{ range .spec.containers }}\n"
        "- image: {{ .image | Quote }}\n"
        "  name: {{ .name | Quote }}\n"
        f"  ready: {str(ready).lower()}\n"
        f"  started: {str(started).lower()}\n"
        f"  restartCount: {restarts}\n"
        f"{last}"
        "  state:\n"
        f"    {state}\n"
        "{{ end }}\n"
    )


def _stage(name: str, phases: list[str], match: list[dict[str, Any]], status: str, delay_ms: int | None) -> dict:
    spec: dict[str, Any] = {"resourceRef": {"apiGroup": "v1", "kind": "Pod"}, "weight": 1}
    if delay_ms is not None:
        spec["delay"] = {"durationMilliseconds": delay_ms}
    spec["selector"] = {
        "matchExpressions": [
            {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
            {"key": ".status.phase", "operator": "In", "values": phases},
            *match,
        ]
    }
    spec["next"] = {"statusTemplate": status}
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": name}, "spec": spec}


def _image(image: str) -> dict[str, Any]:
    return {"key": ".spec.containers.[].image", "operator": "In", "values": [image]}


_NOW = "{{ $now := Now }}\n"
_TERMINATED = "terminated: {exitCode: 1, reason: Error, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}"


def fault_stages() -> list[dict[str, Any]]:
    """Every Stage of this module, for KWOK's --config (objects.kwok_config)."""
    pull_waiting = (
        'waiting: {reason: ImagePullBackOff, message: {{ printf "Back-off pulling image %q" .image | Quote }}}'
    )
    crash_waiting = (
        "waiting: {reason: CrashLoopBackOff, "
        'message: {{ printf "back-off 10s restarting failed container=%s" .name | Quote }}}'
    )
    restarts = "{{ $restarts := 0 }}\n{{ with .status.containerStatuses }}{{ $restarts = (index . 0).restartCount }}{{ end }}\n"
    started = "{{ $started := $now }}\n{{ with .status.startTime }}{{ $started = . }}{{ end }}\n"
    imex_gate = {"key": f'.metadata.annotations["{IMEX_READY_ANNOTATION}"]', "operator": "DoesNotExist"}
    return [
        _stage(
            "realk8s-image-pull-fails",
            ["Pending"],
            [_image(PULL_FAILS_IMAGE)],
            _containers(False, False, "0", pull_waiting) + "phase: Pending\n",
            1000,
        ),
        _stage(
            "realk8s-crash-loop",
            ["Pending", "Running"],
            [_image(CRASH_LOOP_IMAGE)],
            _NOW
            + restarts
            + _conditions(False)
            + _containers(False, False, "{{ add1 $restarts }}", crash_waiting, _TERMINATED)
            + _ADDRESSES
            + "phase: Running\n",
            1000,
        ),
        _stage(
            "realk8s-job-fails",
            ["Running"],
            [
                {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]},
                _image(JOB_FAILS_IMAGE),
            ],
            _NOW + _containers(False, False, "0", _TERMINATED) + "phase: Failed\n",
            None,
        ),
        # A pod with resource claims stays ContainerCreating until the DRA stand-in opens its gate (KWOK has no
        # NodePrepareResources; the compute-domain kubelet plugin fails it until the node is Ready in the domain).
        # Same weight as the fault Stages: a pod that also matches one of them ends in that fault either way, since
        # only the fault Stage matches once the gate is open.
        # It says Ready False, as a kubelet does for a pod in ContainerCreating, so that no late play of it can
        # leave a Pending pod Ready (objects.kwok_config says how one did).
        _stage(
            "realk8s-imex-channel-wait",
            ["Pending"],
            [{"key": ".spec.resourceClaims.[].name", "operator": "Exists"}, imex_gate],
            _NOW
            + _conditions(False, "ContainersNotReady")
            + _containers(False, False, "0", "waiting: {reason: ContainerCreating}")
            + "phase: Pending\n",
            200,
        ),
        _stage(
            "realk8s-exits-1",
            ["Pending", "Running"],
            [_image(EXITS_IMAGE)],
            _NOW
            + _conditions(False, "PodFailed")
            + _containers(False, False, "0", _TERMINATED)
            + _ADDRESSES
            + "phase: Failed\n",
            1000,
        ),
        _stage(
            "realk8s-never-ready",
            ["Pending", "Running"],
            [_image(NEVER_READY_IMAGE)],
            _NOW
            + started
            + _conditions(False, "ContainersNotReady", at="$started")
            + _containers(False, True, "0", "running: {startedAt: {{ $started | Quote }}}")
            + _ADDRESSES
            + "phase: Running\nstartTime: {{ $started | Quote }}\n",
            1000,
        ),
        _stage(
            "realk8s-slow-ready",
            ["Pending"],
            [_image(SLOW_READY_IMAGE)],
            _NOW
            + _conditions(True)
            + _containers(True, True, "0", "running: {startedAt: {{ $now | Quote }}}")
            + _ADDRESSES
            + "phase: Running\nstartTime: {{ $now | Quote }}\n",
            SLOW_READY_S * 1000,
        ),
    ]
