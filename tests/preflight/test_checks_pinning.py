"""Floating versions (Hub branches, image tags) FAIL a production profile and WARN otherwise; image platforms."""

from __future__ import annotations

from k3deploy.pin.oci import DOCKER_MANIFEST, OCI_INDEX, ImageResolution, Platform, parse_image
from k3deploy.preflight.checks_pinning import image_platform_check, pinning_checks
from k3deploy.profile import load_profile
from k3deploy.report.model import Status

GB300 = "kimi-k3-gb300-tp16"
SHA = "0123456789abcdef0123456789abcdef01234567"
DIGEST = "sha256:" + "c" * 64
#: Every version of the GB300 profile pinned: what `k3deploy pin` writes.
PINNED = [
    f"model.revision={SHA}",
    f"speculative.revision={SHA}",
    f"vllm.image=vllm/vllm-openai:kimi-k3-aarch64-cu130@{DIGEST}",
    f"kubernetes.smoke_image=ghcr.io/k3deploy/k3deploy:0.1.0@{DIGEST}",
]
FIELDS = [
    "profile.model.revision",
    "profile.speculative.revision",
    "profile.vllm.image",
    "profile.kubernetes.smoke_image",
]


def test_builtin_production_profile_fails_on_every_floating_version() -> None:
    results = {r.name: r for r in pinning_checks(load_profile(GB300))}
    assert list(results) == FIELDS
    assert {r.status for r in results.values()} == {Status.FAIL}
    assert results["profile.model.revision"].measured == "main"
    assert results["profile.vllm.image"].measured == "vllm/vllm-openai:kimi-k3"
    hint = results["profile.vllm.image"].hint or ""
    assert hint.startswith("k3deploy pin -p kimi-k3-gb300-tp16 -o pinned.yaml, then deploy pinned.yaml (")
    # pin needs the internet: the hint names the offline way to rehearse and what it gives up.
    assert "--set production=false turns these FAILs into WARNs" in hint
    assert "giving up the guarantee that a re-deploy runs the weights and image you validated" in hint


def test_a_non_production_profile_is_not_told_to_turn_production_off() -> None:
    results = pinning_checks(load_profile(GB300, ["production=false"]))
    assert all(r.hint == "k3deploy pin -p kimi-k3-gb300-tp16 -o pinned.yaml, then deploy pinned.yaml" for r in results)


def test_non_production_profile_only_warns() -> None:
    results = pinning_checks(load_profile(GB300, ["production=false", "model.revision=null"]))
    assert [(r.name, r.status) for r in results] == [(name, Status.WARN) for name in FIELDS]


def test_pinned_versions_pass() -> None:
    results = pinning_checks(load_profile(GB300, PINNED))
    assert [(r.name, r.status) for r in results] == [(name, Status.PASS) for name in FIELDS]


def test_one_floating_field_fails_alone() -> None:
    results = {r.name: r.status for r in pinning_checks(load_profile(GB300, [*PINNED, "speculative.revision=v1.0"]))}
    assert results == {**{name: Status.PASS for name in FIELDS}, "profile.speculative.revision": Status.FAIL}


def test_every_image_of_the_set_is_judged_the_endpoint_picker_when_it_is_rendered() -> None:
    # The prefetch runs the vLLM image unless the profile names its own, which is then judged too.
    results = {
        r.name: r.status
        for r in pinning_checks(load_profile(GB300, [*PINNED, "kubernetes.prefetch_image=python:3.12-slim"]))
    }
    assert results["profile.kubernetes.prefetch_image"] is Status.FAIL
    pool = {r.name: r for r in pinning_checks(load_profile(GB300, [*PINNED, "kubernetes.routing=inference-pool"]))}
    assert list(pool) == [*FIELDS, "profile.kubernetes.epp_image"]
    assert pool["profile.kubernetes.epp_image"].status is Status.FAIL
    assert pool["profile.kubernetes.epp_image"].measured == "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"


def test_profile_file_gets_a_generic_pin_command(tmp_path) -> None:
    import yaml

    from k3deploy.profile.load import load_raw

    data, _ = load_raw(GB300, ["name=my-k3"])
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data))
    [first, *_] = pinning_checks(load_profile(str(path)))
    assert (first.hint or "").startswith("k3deploy pin -p PROFILE.yaml -o pinned.yaml, then deploy pinned.yaml (")


def test_local_rehearsal_profile_has_nothing_to_pin() -> None:
    assert [(r.name, r.status) for r in pinning_checks(load_profile("local-cpu"))] == [
        ("profile.revisions", Status.SKIP)
    ]


def _resolved(platforms: list[Platform], media_type: str = OCI_INDEX) -> ImageResolution:
    return ImageResolution(
        ref=parse_image("vllm/vllm-openai:kimi-k3"), digest=DIGEST, media_type=media_type, platforms=platforms
    )


def test_image_platforms_pass_fail_and_warn() -> None:
    profile = load_profile(GB300, PINNED)
    both = image_platform_check(
        profile, "img", _resolved([Platform("linux", "amd64"), Platform("linux", "arm64", "v8")]), None
    )
    assert (both.status, both.measured, both.target) == (Status.PASS, "linux/amd64, linux/arm64/v8", "linux/arm64")
    amd = image_platform_check(profile, "img", _resolved([Platform("linux", "amd64")], DOCKER_MANIFEST), None)
    assert amd.status is Status.FAIL and "single-platform image without linux/arm64" in amd.detail
    unknown = image_platform_check(profile, "img", None, "cannot reach registry registry-1.docker.io: ConnectError")
    assert unknown.status is Status.WARN and "registry-1.docker.io" in unknown.detail
