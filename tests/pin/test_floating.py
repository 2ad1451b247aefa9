"""Which fields float: every image the rendered set runs, and revisions that are not full commits."""

from __future__ import annotations

from k3deploy.pin.floating import Pinnable, pinnable_fields
from k3deploy.preflight.checks_pinning import pinning_checks
from k3deploy.profile import load_profile
from k3deploy.report.model import Status

GB300 = "kimi-k3-gb300-tp16"


def test_every_image_of_the_set_is_pinnable_and_the_endpoint_picker_only_when_rendered() -> None:
    images = [f.field for f in pinnable_fields(load_profile(GB300)) if f.kind == "image"]
    assert images == ["vllm.image", "kubernetes.smoke_image"]  # the prefetch runs vllm.image
    own = load_profile(GB300, ["kubernetes.prefetch_image=python:3.12-slim"])
    assert [f.field for f in pinnable_fields(own) if f.kind == "image"][-1] == "kubernetes.prefetch_image"
    pool = load_profile(GB300, ["kubernetes.routing=inference-pool"])
    assert [f.field for f in pinnable_fields(pool) if f.kind == "image"][-1] == "kubernetes.epp_image"


def test_a_short_sha_is_not_pinned() -> None:
    assert not Pinnable("model.revision", "revision", "org/name", "1111111").pinned
    assert Pinnable("model.revision", "revision", "org/name", "1" * 40).pinned
    results = {r.name: r for r in pinning_checks(load_profile(GB300, ["model.revision=1a2b3c4"]))}
    assert results["profile.model.revision"].status == Status.FAIL  # a production profile
