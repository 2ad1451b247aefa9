"""Checks of the versions a profile names: floating revisions and tags, and the image's platforms.

Pure: no I/O. A production profile (`production: true`) must name exact versions, so a re-deploy runs the
weights and the image that were validated: a Hub branch (`main`) or an image tag without a digest is a
FAIL there and a WARN elsewhere, with the `k3deploy pin` command that fixes it as the hint (and, in production,
the way to rehearse without the internet `pin` needs, `--set production=false`, and what that gives up).
"""

from __future__ import annotations

from k3deploy.pin.floating import node_arch, pin_command, pinnable_fields
from k3deploy.pin.oci import ImageResolution, runs_on
from k3deploy.profile.model import Profile
from k3deploy.report.model import CheckResult, Status

__all__ = ["image_platform_check", "pin_command", "pinning_checks"]


def pinning_checks(profile: Profile) -> list[CheckResult]:
    """One row per Hub revision and image of the profile: PASS when pinned, else FAIL (production) or WARN."""
    fields = pinnable_fields(profile)
    if not fields:
        return [
            CheckResult(
                name="profile.revisions",
                status=Status.SKIP,
                detail="no Hub models or images to pin (local or generated weights)",
            )
        ]
    floating_status = Status.FAIL if profile.production else Status.WARN
    results = []
    for item in fields:
        name = f"profile.{item.field}"
        if item.kind == "revision":
            target = "40-hex commit"
            if item.pinned:
                results.append(
                    CheckResult(
                        name=name,
                        status=Status.PASS,
                        measured=item.value,
                        target=target,
                        detail=f"{item.subject} pinned",
                    )
                )
                continue
            detail = f"{item.subject} at {item.value!r} floats: a re-deploy may load different weights than the ones you validated"
        else:
            target = "tag@sha256:<digest>"
            if item.pinned:
                results.append(
                    CheckResult(
                        name=name, status=Status.PASS, measured=item.value, target=target, detail="pinned by digest"
                    )
                )
                continue
            detail = "a tag without a digest floats: the registry may serve a different image on the next pull"
        if profile.production:
            detail += " (production profile)"
        results.append(
            CheckResult(
                name=name,
                status=floating_status,
                measured=item.value,
                target=target,
                detail=detail,
                hint=f"{pin_command(profile)}, then deploy pinned.yaml" + (OFFLINE_HINT if profile.production else ""),
            )
        )
    return results


#: `pin` asks the Hub and the registry; without them, a rehearsal can still go on, and the hint says at what cost.
OFFLINE_HINT = (
    " (pin needs the Hub and the registry; to rehearse without them, --set production=false turns these FAILs"
    " into WARNs, giving up the guarantee that a re-deploy runs the weights and image you validated, and lets"
    " test-only settings such as synthetic rejection sampling through)"
)


def image_platform_check(
    profile: Profile, image: str, resolved: ImageResolution | None, problem: str | None
) -> CheckResult:
    """The platforms the registry lists for `image`: FAIL without the nodes' platform, WARN when it could not be asked."""
    arch = node_arch(profile)
    target = f"linux/{arch}"
    if resolved is None:
        return CheckResult(
            name="image.platforms",
            status=Status.WARN,
            measured=None,
            target=target,
            detail=f"{image}: could not ask the registry: {problem}",
            hint="check from a machine that reaches the registry: k3deploy pin -p ... (a mirror: kubernetes.registry_mirrors or K3DEPLOY_REGISTRY_URL)",
        )
    listed = [str(p) for p in resolved.platforms]
    measured = ", ".join(listed) or "none"
    kind = "index" if resolved.is_index else "single-platform image"
    if runs_on(resolved.platforms, arch):
        return CheckResult(
            name="image.platforms",
            status=Status.PASS,
            measured=measured,
            target=target,
            detail=f"{image} is a {kind} at {resolved.digest}",
        )
    return CheckResult(
        name="image.platforms",
        status=Status.FAIL,
        measured=measured,
        target=target,
        detail=f"{image} is a {kind} without {target}: the serving pods cannot start on the nodes",
        hint=f"choose an image built for {target} (e.g. the -aarch64 tag for GB300), or correct hardware.arch",
    )
