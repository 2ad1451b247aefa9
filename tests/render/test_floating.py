"""Versions that float until pinned: the default vLLM image is the tag the vLLM recipe publishes, and the rendered
set says, on the objects Argo CD and Flux show, which fields float; `render` warns once per floating field."""

from __future__ import annotations

from pathlib import Path

import yaml

from k3deploy.pin.floating import pinnable_fields
from k3deploy.profile import load_profile
from k3deploy.render.manifests import FLOATING_ANNOTATION, build
from tests.conftest import EXAMPLE_SETS, REPO_ROOT, run_cli
from tests.preflight.test_checks_pinning import PINNED

K3 = "kimi-k3-gb300-tp16"
#: The image the vLLM recipe for Kimi K3 names (vllm-project/recipes models/moonshotai/Kimi-K3.yaml); plain vLLM
#: tags are multi-arch indexes, so `pin` resolves the nodes' platform from it.
RECIPE_IMAGE = "vllm/vllm-openai:kimi-k3"
WORKLOADS = {"LeaderWorkerSet", "Job", "Deployment"}


def test_default_image_is_the_recipes_tag_and_the_arch_stays_a_field() -> None:
    profile = load_profile(K3)
    assert profile.vllm.image == RECIPE_IMAGE
    assert profile.vllm.image_arch == "arm64" and profile.hardware is not None and profile.hardware.arch == "arm64"


def test_every_workload_names_the_floating_fields() -> None:
    profile = load_profile(K3)
    floating = [f.field for f in pinnable_fields(profile) if not f.pinned]
    assert "vllm.image" in floating and "model.revision" in floating
    objs = [m.obj for m in build(profile)]
    workloads = [o for o in objs if o["kind"] in WORKLOADS]
    assert workloads
    for obj in workloads:
        value = obj["metadata"]["annotations"][FLOATING_ANNOTATION]
        assert [entry.split("=", 1)[0] for entry in value.split(", ")] == floating, obj["metadata"]["name"]
    assert "vllm.image=vllm/vllm-openai:kimi-k3" in workloads[0]["metadata"]["annotations"][FLOATING_ANNOTATION]


def test_a_pinned_profile_renders_no_floating_annotation() -> None:
    profile = load_profile(K3)
    sets = []
    for field in pinnable_fields(profile):
        value = "a" * 40 if field.kind == "revision" else f"{field.value}@sha256:{'0' * 64}"
        sets.append(f"{field.field}={value}")
    objs = [m.obj for m in build(load_profile(K3, sets))]
    assert all(FLOATING_ANNOTATION not in (o["metadata"].get("annotations") or {}) for o in objs)


def test_render_warns_once_per_floating_field(tmp_path: Path) -> None:
    result = run_cli("render", "-p", K3, *EXAMPLE_SETS, "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    floating = [f for f in pinnable_fields(load_profile(K3)) if not f.pinned]
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ") and "floats" in line]
    assert len(warnings) == len(floating)
    for field, line in zip(floating, warnings, strict=True):
        assert line.startswith(f"warning: {field.field} {field.value} floats until pinned")


def test_the_committed_gitops_set_says_what_floats() -> None:
    lws = yaml.safe_load((REPO_ROOT / "manifests" / K3 / f"10-leaderworkerset-{K3}.yaml").read_text())
    assert "vllm.image=vllm/vllm-openai:kimi-k3" in lws["metadata"]["annotations"][FLOATING_ANNOTATION]


def test_render_refuses_a_production_profile_that_floats_naming_each_field_on_one_line(tmp_path: Path) -> None:
    result = run_cli("render", "-p", K3, "-o", str(tmp_path / "out"))
    assert result.returncode == 2
    error, hint = result.stderr.strip().splitlines()
    floating = [f for f in pinnable_fields(load_profile(K3)) if not f.pinned]
    assert [f.field for f in floating] == [
        "model.revision",
        "speculative.revision",
        "vllm.image",
        "kubernetes.smoke_image",
    ]
    assert error.startswith("error: production profile 'kimi-k3-gb300-tp16' names floating versions: ")
    for field in floating:
        assert f"{field.field}={field.value} (" in error
    assert "a tag without a digest" in error and "not a 40-hex commit" in error
    assert (
        hint
        == "hint: k3deploy pin -p kimi-k3-gb300-tp16 -o pinned.yaml, then render pinned.yaml (or set production: false for an example set)"
    )
    assert not (tmp_path / "out").exists()


def test_the_jobs_k3deploy_image_alone_is_refused_until_pinned() -> None:
    # Every other version pinned: the smoke and node-preflight Jobs' k3deploy image is what is left.
    sets = [s for s in PINNED if not s.startswith("kubernetes.smoke_image")]
    result = run_cli("render", "-p", K3, *[a for s in sets for a in ("--set", s)], "-o", "-")
    assert result.returncode == 2
    assert (
        "names floating versions: kubernetes.smoke_image=ghcr.io/k3deploy/k3deploy:0.1.0 (a tag without a digest)\n"
        in result.stderr
    )
    pinned = run_cli("render", "-p", K3, *[a for s in PINNED for a in ("--set", s)], "-o", "-")
    assert pinned.returncode == 0, pinned.stderr
    assert "floats" not in pinned.stderr
    jobs = [d for d in yaml.safe_load_all(pinned.stdout) if d["kind"] == "Job"]
    images = {c["image"] for j in jobs for c in j["spec"]["template"]["spec"]["containers"]}
    assert all("@sha256:" in image for image in images)


def test_the_committed_example_set_is_the_non_production_render() -> None:
    config = yaml.safe_load((REPO_ROOT / "manifests" / K3 / f"02-configmap-{K3}-profile.yaml").read_text())
    assert yaml.safe_load(config["data"]["profile.yaml"])["production"] is False
    # The command the GitOps guide gives for the committed example set.
    guide = (REPO_ROOT / "docs" / "guide" / "gitops.md").read_text(encoding="utf-8")
    assert f"k3deploy render -p {K3} --set production=false -o manifests/{K3}" in guide
