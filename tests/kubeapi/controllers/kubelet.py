"""A kubelet for every node: bound pods go Running then Ready after configurable delays, or into a failure mode
chosen per pod or image (ImagePullBackOff, CrashLoopBackOff with logs, OOMKilled, Error, never ready, stuck
creating); run-to-completion pods finish; deleted pods are removed after the termination delay.
"""

from __future__ import annotations

import re
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.kubeapi.apply import now
from tests.kubeapi.controllers.base import Controller, set_condition
from tests.kubeapi.controllers.events import record
from tests.kubeapi.store import Store

MODES = ("Ready", "ImagePullBackOff", "CrashLoopBackOff", "OOMKilled", "Error", "NeverReady", "ContainerCreating")


@dataclass
class Rule:
    """Pods whose name matches `pod` (regex) or whose container image contains `image` get `mode`."""

    mode: str
    image: str | None = None
    pod: str | None = None
    logs: list[str] = field(default_factory=list)
    exit_code: int | None = None
    times: int | None = None
    start_delay: float | None = None
    ready_delay: float | None = None

    def matches(self, pod: dict) -> bool:
        """Whether this rule picks the pod."""
        if self.times is not None and self.times <= 0:
            return False
        if self.pod is not None and not re.search(self.pod, pod["metadata"]["name"]):
            return False
        images = [c.get("image", "") for c in pod["spec"].get("containers", [])]
        return self.image is None or any(self.image in image for image in images)


@dataclass
class _Run:
    rule: Rule
    seen: float
    phase: str = "bound"  # bound -> started -> ready | crashed -> ... ; done
    since: float = 0.0
    crashes: int = 0


class Kubelet(Controller):
    """Simulates the kubelets of all nodes."""

    name = "kubelet"

    def __init__(self, store: Store, tick: float = 0.05) -> None:
        super().__init__(store, tick)
        #: Seconds from binding to Running, and from Running to Ready.
        self.start_delay = 0.1
        self.ready_delay = 0.2
        #: How long run-to-completion (restartPolicy Never/OnFailure) containers run.
        self.run_time = 0.3
        #: How long a crashing container runs before it dies, and the back-off before it is restarted.
        self.crash_after = 0.2
        self.backoff = 0.5
        #: Lines every container logs on start.
        self.startup_logs = ["INFO:     Started server process [1]", "INFO:     Application startup complete."]
        self.rules: list[Rule] = []
        #: Predicates that hold a bound pod in ContainerCreating (a DRA driver not ready to prepare its claims).
        self.holds: list[Callable[[dict], bool]] = []
        self._runs: dict[str, _Run] = {}
        self._deleting: dict[str, float] = {}
        self.termination_delay = 0.3

    @property
    def termination_delay(self) -> float:
        """Seconds a deleted pod stays Terminating before it is gone."""
        return self.store.pod_termination_delay

    @termination_delay.setter
    def termination_delay(self, seconds: float) -> None:
        self.store.pod_termination_delay = seconds

    def fail(
        self,
        mode: str,
        *,
        image: str | None = None,
        pod: str | None = None,
        logs: list[str] | None = None,
        exit_code: int | None = None,
        times: int | None = None,
        start_delay: float | None = None,
        ready_delay: float | None = None,
    ) -> Rule:
        """Send matching pods into `mode` (one of MODES); `times` limits how many pods it hits."""
        if mode not in MODES:
            raise ValueError(f"unknown kubelet mode {mode!r}; choose one of {MODES}")
        rule = Rule(mode, image, pod, list(logs or []), exit_code, times, start_delay, ready_delay)
        self.rules.insert(0, rule)
        return rule

    def reconcile(self) -> None:
        """Advance every bound pod."""
        clock = time.monotonic()
        alive = set()
        for pod in self.store.list("pods"):
            uid = pod["metadata"]["uid"]
            alive.add(uid)
            if pod["metadata"].get("deletionTimestamp"):
                started = self._deleting.setdefault(uid, clock)
                if clock - started >= self.termination_delay:
                    self.store.remove_now("pods", pod["metadata"]["name"], pod["metadata"]["namespace"])
                continue
            if not pod["spec"].get("nodeName"):
                continue
            run = self._runs.get(uid)
            if run is None:
                run = self._runs[uid] = _Run(self._rule_for(pod), clock, since=clock)
            self._advance(pod, run, clock)
        for gone in set(self._runs) - alive:
            del self._runs[gone]
        for gone in set(self._deleting) - alive:
            del self._deleting[gone]

    def _rule_for(self, pod: dict) -> Rule:
        for rule in self.rules:
            if rule.matches(pod):
                if rule.times is not None:
                    rule.times -= 1
                return rule
        return Rule("Ready")

    def _advance(self, pod: dict, run: _Run, clock: float) -> None:
        rule, elapsed = run.rule, clock - run.since
        start = self.start_delay if rule.start_delay is None else rule.start_delay
        ready = self.ready_delay if rule.ready_delay is None else rule.ready_delay
        completes = pod["spec"].get("restartPolicy", "Always") != "Always"
        # restartPolicy OnFailure restarts a failed container in place (with back-off), as Always does; only Never
        # leaves the pod Failed (pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions).
        fails_for_good = pod["spec"].get("restartPolicy", "Always") == "Never"
        if run.phase == "bound" and any(hold(pod) for hold in self.holds):
            # A DRA driver not ready to prepare the pod's claims keeps it ContainerCreating.
            if ((pod.get("status") or {}).get("containerStatuses") or [{}])[0].get("state", {}).get("waiting", {}).get(
                "reason"
            ) != "ContainerCreating":
                self._write(pod, "Pending", waiting=("ContainerCreating", ""))
            run.since = clock
            return
        if run.phase == "bound" and elapsed >= start:
            if rule.mode == "ContainerCreating":
                self._write(pod, "Pending", waiting=("ContainerCreating", ""))
            elif rule.mode == "ImagePullBackOff":
                self._image_pull_failure(pod)
            else:
                self._start(pod)
                run.phase = "started"
                run.since = clock
            if run.phase == "bound":
                run.phase = "stuck"
        elif run.phase == "started":
            if rule.mode in ("CrashLoopBackOff", "OOMKilled", "Error") and elapsed >= self.crash_after:
                self._crash(pod, rule, fails_for_good)
                run.phase, run.since = ("done" if fails_for_good else "crashed"), clock
                run.crashes += 1
            elif completes and elapsed >= self.run_time:
                self._complete(pod)
                run.phase = "done"
            elif not completes and rule.mode != "NeverReady" and elapsed >= ready:
                self._write(pod, "Running", running=True, ready=True)
                run.phase = "ready"
        elif run.phase == "crashed" and elapsed >= self.backoff * min(2 ** (run.crashes - 1), 2):
            # The kubelet's restart back-off doubles per crash (10 s, 20 s, ... in a cluster; scaled down here).
            self._restart(pod)
            run.phase, run.since = "started", clock

    # ----- status writes ----------------------------------------------------------------------------------
    def _write(
        self,
        pod: dict,
        phase: str,
        *,
        running: bool = False,
        ready: bool = False,
        waiting: tuple[str, str] | None = None,
        terminated: dict | None = None,
        last_state: dict | None = None,
        restarts: int | None = None,
    ) -> None:
        stamp = now()
        meta = pod["metadata"]
        host = pod["spec"]["nodeName"]

        def mutate(obj: dict) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = phase
            status.setdefault("hostIP", "10.0.0.1")
            status.setdefault(
                "podIP", f"10.244.{zlib.crc32(host.encode()) % 250}.{zlib.crc32(meta['uid'].encode()) % 250 + 2}"
            )
            status.setdefault("startTime", stamp)
            old = {s["name"]: s for s in status.get("containerStatuses", [])}
            statuses = []
            for container in obj["spec"].get("containers", []):
                prev = old.get(container["name"], {})
                state: dict
                if terminated is not None:
                    state = {"terminated": terminated}
                elif waiting is not None:
                    state = {"waiting": {"reason": waiting[0], **({"message": waiting[1]} if waiting[1] else {})}}
                elif running:
                    state = {"running": {"startedAt": prev.get("state", {}).get("running", {}).get("startedAt", stamp)}}
                else:
                    state = {"waiting": {"reason": "ContainerCreating"}}
                entry = {
                    "name": container["name"],
                    "image": container.get("image", ""),
                    "imageID": "",
                    "ready": ready,
                    "started": running,
                    "state": state,
                    "restartCount": prev.get("restartCount", 0) if restarts is None else restarts,
                    "lastState": last_state if last_state is not None else prev.get("lastState", {}),
                }
                statuses.append(entry)
            status["containerStatuses"] = statuses
            conditions = status.setdefault("conditions", [])
            set_condition(conditions, "PodReadyToStartContainers", "True", "", "", stamp)
            set_condition(conditions, "Initialized", "True", "", "", stamp)
            reason = "" if ready else ("PodCompleted" if phase in ("Succeeded", "Failed") else "ContainersNotReady")
            message = (
                ""
                if ready or reason == "PodCompleted"
                else f"containers with unready status: [{' '.join(c['name'] for c in obj['spec'].get('containers', []))}]"
            )
            set_condition(conditions, "ContainersReady", str(ready), reason, message, stamp)
            set_condition(conditions, "Ready", str(ready), reason, message, stamp)
            for cond in conditions:
                for key in ("reason", "message"):
                    if cond.get(key) == "":
                        del cond[key]

        self.store.update("pods", meta["name"], meta["namespace"], mutate, subresource="status", manager=self.name)

    def _event(self, pod: dict, type_: str, reason: str, message: str) -> None:
        record(self.store, pod, type_, reason, message, self.name, pod["spec"].get("nodeName"))

    def _containers(self, pod: dict) -> list[dict]:
        return pod["spec"].get("containers", [])

    def _start(self, pod: dict) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        for container in self._containers(pod):
            self._event(
                pod, "Normal", "Pulled", f'Container image "{container.get("image", "")}" already present on machine'
            )
            self._event(pod, "Normal", "Created", f"Created container: {container['name']}")
            self._event(pod, "Normal", "Started", f"Started container {container['name']}")
            with self.store.lock:
                self.store.logs.setdefault((ns, name, container["name"]), []).extend(self.startup_logs)
        self._write(pod, "Running", running=True, ready=False)

    def _image_pull_failure(self, pod: dict) -> None:
        image = self._containers(pod)[0].get("image", "") if self._containers(pod) else ""
        detail = (
            f'failed to pull and unpack image "docker.io/{image}": failed to resolve reference '
            f'"docker.io/{image}": docker.io/{image}: not found'
        )
        self._event(pod, "Normal", "Pulling", f'Pulling image "{image}"')
        self._event(pod, "Warning", "Failed", f'Failed to pull image "{image}": {detail}')
        self._event(pod, "Warning", "Failed", "Error: ErrImagePull")
        self._event(pod, "Normal", "BackOff", f'Back-off pulling image "{image}"')
        self._event(pod, "Warning", "Failed", "Error: ImagePullBackOff")
        self._write(
            pod, "Pending", waiting=("ImagePullBackOff", f'Back-off pulling image "{image}": ErrImagePull: {detail}')
        )

    def _crash(self, pod: dict, rule: Rule, completes: bool) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        oom = rule.mode == "OOMKilled"
        code = rule.exit_code if rule.exit_code is not None else (137 if oom else 1)
        terminated = {
            "exitCode": code,
            "reason": "OOMKilled" if oom else "Error",
            "startedAt": now(),
            "finishedAt": now(),
        }
        container = self._containers(pod)[0]["name"]
        with self.store.lock:
            lines = self.store.logs.setdefault((ns, name, container), [])
            lines.extend(rule.logs)
            if not completes:  # the dead instance is now the "previous" one; its logs stay until a restart
                self.store.previous_logs[(ns, name, container)] = list(lines)
        if completes:
            self._write(pod, "Failed", terminated=terminated)
            return
        restarts = 1 + max(
            (s.get("restartCount", 0) for s in pod.get("status", {}).get("containerStatuses", [])), default=0
        )
        uid = pod["metadata"]["uid"]
        message = f"back-off 10s restarting failed container={container} pod={name}_{ns}({uid})"
        self._event(
            pod, "Warning", "BackOff", f"Back-off restarting failed container {container} in pod {name}_{ns}({uid})"
        )
        self._write(
            pod,
            "Running",
            waiting=("CrashLoopBackOff", message),
            last_state={"terminated": terminated},
            restarts=restarts,
        )

    def _restart(self, pod: dict) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        with self.store.lock:
            for container in self._containers(pod):
                self.store.logs[(ns, name, container["name"])] = list(self.startup_logs)
        self._write(pod, "Running", running=True, ready=False)

    def _complete(self, pod: dict) -> None:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        with self.store.lock:
            for container in self._containers(pod):
                self.store.logs.setdefault((ns, name, container["name"]), []).append("done")
        self._write(
            pod, "Succeeded", terminated={"exitCode": 0, "reason": "Completed", "startedAt": now(), "finishedAt": now()}
        )
