"""Controller versions (pure): what the rendered set needs of the LeaderWorkerSet controller and the NVIDIA DRA
driver, what the cluster runs (from its workloads' image tags or Helm labels), and the checks comparing the two.

Each requirement names the upstream source it was read from:

- LWS v0.4.0: pod templates with the flat `resourceClaims[].resourceClaimTemplateName`. The LWS CRD embeds the
  pod template schema of the k8s.io/api it was built with; up to v0.3.0 (k8s.io/api v0.29) the field sits under
  `source:`, so an older CRD prunes the flat one silently (kubernetes-sigs/lws
  config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml at v0.3.0 and v0.4.0).
- LWS v0.9.0: `status.observedGeneration`, which proves a rollout's readiness belongs to the applied template
  (api/leaderworkerset/v1/leaderworkerset_types.go); k3deploy supports no older controller.
- LWS v0.9.0: `restartPolicy: RecreateGroupAfterStart` (api/leaderworkerset/v1/leaderworkerset_types.go; the v0.8.0
  CRD's enum is Default, RecreateGroupOnPodRestart, None, so older servers reject it).
- NVIDIA DRA driver v25.8.0: ComputeDomain `numNodes: 0`, which needs the IMEXDaemonsWithDNSNames feature (on by
  default from v25.8.0; NVIDIA/k8s-dra-driver-gpu api/nvidia.com/resource/v1beta1/computedomain.go). Before it,
  `numNodes` must be the number of nodes joining.

The DRA driver moved from NVIDIA's calendar versions (v25.3.0 .. v25.12.0, chart `nvidia-dra-driver-gpu`, image
nvcr.io/nvidia/k8s-dra-driver-gpu) to `dra-driver-nvidia-gpu` (chart and image registry.k8s.io/dra-driver-nvidia/
dra-driver-nvidia-gpu) versioned from v0.4.0 (RENAMED_DRA_FIRST, which `kubernetes.dra_driver_version` names as
its start too); a v0.x of the renamed driver is newer than every v25.x.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from k3deploy.kobject import KubeObject
from k3deploy.profile.kubernetes_spec import RENAMED_DRA_FIRST
from k3deploy.report.model import CheckResult, Status

LWS = "lws"
DRA = "dra-driver"
#: Profile fields that say which version a set is rendered for (the hint names them).
PROFILE_FIELDS = {LWS: "kubernetes.lws_version", DRA: "kubernetes.dra_driver_version"}
LABELS = {LWS: "LeaderWorkerSet controller", DRA: "NVIDIA DRA driver"}
_LWS_IMAGE = re.compile(r"(^|/)lws/lws$")
_DRA_IMAGE = re.compile(r"(^|/)(k8s-dra-driver-gpu|k8s-dra-driver|dra-driver-nvidia-gpu)$")
_DRA_CHARTS = ("nvidia-dra-driver-gpu", "dra-driver-nvidia-gpu")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Requirement:
    """A feature of the rendered set and the lowest controller version that supports it."""

    component: str
    minimum: str
    feature: str
    #: FAIL below the minimum when the feature is rejected or silently dropped; WARN when only weakened.
    blocking: bool = True


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """`v0.8.0` / `25.8.1` / `v0.9.0-rc.1` as a comparable triple (None when not a version)."""
    match = _VERSION.match(text or "")
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def _order(component: str, version: tuple[int, int, int]) -> tuple[int, ...]:
    """Sort key: the renamed DRA driver's v0.x comes after NVIDIA's calendar versions."""
    if component == DRA:
        # Calendar releases (v25.x) first, then the renamed driver from RENAMED_DRA_FIRST on.
        return (0 if version[0] >= 25 or version < RENAMED_DRA_FIRST else 1, *version)
    return version


def at_least(component: str, installed: str, minimum: str) -> bool:
    """Whether `installed` is `minimum` or later (True when either cannot be read)."""
    have, want = parse_version(installed), parse_version(minimum)
    if have is None or want is None:
        return True
    return _order(component, have) >= _order(component, want)


def _pod_specs(obj: KubeObject) -> list[KubeObject]:
    template = (obj.get("spec") or {}).get("leaderWorkerTemplate") or {}
    return [(t.get("spec") or {}) for t in (template.get("leaderTemplate"), template.get("workerTemplate")) if t]


def required_versions(objects: list[KubeObject]) -> list[Requirement]:
    """The controller versions the rendered `objects` need, one requirement per feature used."""
    found: list[Requirement] = []
    for obj in objects:
        kind, spec = obj.get("kind"), obj.get("spec") or {}
        if kind == "LeaderWorkerSet":
            found.append(Requirement(LWS, "v0.9.0", "status.observedGeneration (rollout readiness proven)"))
            if (spec.get("leaderWorkerTemplate") or {}).get("restartPolicy") == "RecreateGroupAfterStart":
                found.append(Requirement(LWS, "v0.9.0", "restartPolicy: RecreateGroupAfterStart"))
            if any(
                "resourceClaimTemplateName" in claim
                for pod in _pod_specs(obj)
                for claim in pod.get("resourceClaims") or []
            ):
                found.append(Requirement(LWS, "v0.4.0", "flat resourceClaims[].resourceClaimTemplateName"))
        elif kind == "ComputeDomain" and spec.get("numNodes") == 0:
            found.append(Requirement(DRA, "v25.8.0", "ComputeDomain numNodes: 0 (IMEX daemons with DNS names)"))
    return found


def _images(obj: KubeObject) -> list[str]:
    spec = (((obj.get("spec") or {}).get("template") or {}).get("spec")) or {}
    return [c.get("image") or "" for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])]


def _tag(image: str) -> tuple[str, str | None]:
    """(repository, tag) of an image reference; a digest alone gives no tag."""
    name = image.split("@", 1)[0]
    repo, _, tag = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
    return repo, (tag or None)


def installed_versions(workloads: list[KubeObject]) -> dict[str, str]:
    """The LWS controller's and the DRA driver's versions, from Deployments and DaemonSets of any namespace:
    their image tag, else the Helm labels (`app.kubernetes.io/version`, `helm.sh/chart: <chart>-<version>`)."""
    found: dict[str, str] = {}
    for obj in workloads:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for image in _images(obj):
            repo, tag = _tag(image)
            for component, pattern in ((LWS, _LWS_IMAGE), (DRA, _DRA_IMAGE)):
                if pattern.search(repo) and component not in found:
                    version = tag if parse_version(tag) else labels.get("app.kubernetes.io/version")
                    if parse_version(version):
                        found[component] = str(version)
        chart = labels.get("helm.sh/chart", "")
        for name in _DRA_CHARTS:
            if chart.startswith(f"{name}-") and DRA not in found and parse_version(chart[len(name) + 1 :]):
                found[DRA] = chart[len(name) + 1 :]
    return found


def version_checks(objects: list[KubeObject], installed: dict[str, str] | None) -> list[CheckResult]:
    """One check per component the set needs: PASS at or above every minimum, FAIL (WARN when only weakened)
    below; WARN when the installed version could not be read. `installed` None: not looked at (no checks)."""
    if installed is None:
        return []
    results = []
    needs = required_versions(objects)
    for component in (LWS, DRA):
        mine = [r for r in needs if r.component == component]
        if not mine:
            continue
        name = f"k8s.{component.replace('-', '_')}_version"
        highest = max(mine, key=lambda r: _order(component, parse_version(r.minimum) or (0, 0, 0)))
        have = installed.get(component)
        if have is None:
            results.append(
                CheckResult(
                    name=name,
                    status=Status.WARN,
                    measured="not found",
                    target=f">= {highest.minimum}",
                    detail=f"no {LABELS[component]} workload with a versioned image or Helm label was found",
                    hint=f"check that the {LABELS[component]} is installed; set {PROFILE_FIELDS[component]} to its version",
                )
            )
            continue
        short = [r for r in mine if not at_least(component, have, r.minimum)]
        if not short:
            results.append(CheckResult(name=name, status=Status.PASS, measured=have, target=f">= {highest.minimum}"))
            continue
        status = Status.FAIL if any(r.blocking for r in short) else Status.WARN
        detail = "; ".join(f"{r.feature} needs {r.minimum}" for r in short)
        results.append(
            CheckResult(
                name=name,
                status=status,
                measured=have,
                target=f">= {max(short, key=lambda r: _order(component, parse_version(r.minimum) or (0, 0, 0))).minimum}",
                detail=f"{LABELS[component]} {have} is older than the rendered set needs: {detail}",
                hint=f"upgrade the {LABELS[component]}"
                + (
                    ""
                    if component == LWS
                    else f", or `--set {PROFILE_FIELDS[component]}={have}` renders what {have} supports"
                ),
            )
        )
    return results
