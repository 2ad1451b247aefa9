"""More KWOK Stages for the realk8s plane's fault cases, keyed by a container image as objects.py's: a container
that exits 1 (restartPolicy Never pods then fail, as a failed Job pod does), one that runs but never gets ready
and one that takes a while to start (a large image pulled).

KWOK picks among matching Stages by weight (sigs.k8s.io/kwok pkg/kwok/controllers/stage_controller.go); its own
have weight 0, so each of these wins wherever its image is in the pod. A Stage keeps matching once applied (the
same status again is no change), so KWOK's pod-ready never turns such a pod Ready.
"""

from __future__ import annotations

from typing import Any

import yaml

#: A pod with a container of this image fails: phase Failed, the container terminated with exit code 1.
EXITS_IMAGE = "registry.invalid/realk8s/exits:exit-1"
#: A pod with a container of this image runs and is never Ready (its readiness probe never passes).
NEVER_READY_IMAGE = "registry.invalid/realk8s/never-ready:probe-fails"
#: A pod with a container of this image stays ContainerCreating for SLOW_READY_S, then runs Ready (a large image).
SLOW_READY_IMAGE = "registry.invalid/realk8s/slow:ready-after-20s"
SLOW_READY_S = 20

_EXITS = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: realk8s-exits-1
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  weight: 1
  delay: {durationMilliseconds: 1000}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Pending, Running]}
    - {key: '.spec.containers.[].image', operator: In, values: [IMAGE]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "False", reason: PodFailed, lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "False", reason: PodFailed, lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated: {exitCode: 1, reason: Error, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Failed
""".replace("IMAGE", EXITS_IMAGE)

_NEVER_READY = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: realk8s-never-ready
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  weight: 1
  delay: {durationMilliseconds: 1000}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Pending, Running]}
    - {key: '.spec.containers.[].image', operator: In, values: [IMAGE]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $started := $now }}
      {{ with .status.startTime }}{{ $started = . }}{{ end }}
      conditions:
      - {type: Initialized, status: "True", lastTransitionTime: {{ $started | Quote }}}
      - {type: Ready, status: "False", reason: ContainersNotReady, lastTransitionTime: {{ $started | Quote }}}
      - {type: ContainersReady, status: "False", reason: ContainersNotReady, lastTransitionTime: {{ $started | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: true
        restartCount: 0
        state:
          running: {startedAt: {{ $started | Quote }}}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $started | Quote }}
""".replace("IMAGE", NEVER_READY_IMAGE)


_SLOW_READY = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: realk8s-slow-ready
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  weight: 1
  delay: {durationMilliseconds: DELAY}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Pending]}
    - {key: '.spec.containers.[].image', operator: In, values: [IMAGE]}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running: {startedAt: {{ $now | Quote }}}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
""".replace("IMAGE", SLOW_READY_IMAGE).replace("DELAY", str(SLOW_READY_S * 1000))


def fault_stages() -> list[dict[str, Any]]:
    """The Stages of this module, for KWOK's --config (objects.kwok_config)."""
    return [yaml.safe_load(text) for text in (_EXITS, _NEVER_READY, _SLOW_READY)]
