"""The profile ConfigMap: the effective profile (file or built-in, after --set) reaches the smoke Job intact."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from k3deploy.profile import builtin_names, load_profile
from k3deploy.profile.model import Profile
from k3deploy.render.manifests import build, profile_yaml
from k3deploy.rollout.order import apply_order
from tests.conftest import run_cli
from tests.smoke.scripted_server import MODEL, Script, scripted_server

K3 = "kimi-k3-gb300-tp16"
PATH_IN_JOB = "/etc/k3deploy/profile.yaml"
#: Overrides that exercise the dump: a multi-line and non-ASCII description, strings YAML would misread
#: unquoted, floats, nested maps, nulls and lists.
TRICKY = [
    'description="déjà vu, two lines\\n  indented: second\\n"',
    "vllm.env.VLLM_FLAG='yes'",
    "vllm.env.NUMBER='0123'",
    "vllm.extra_args=['--x=1', '--y', 'on']",
    "speculative.extra={'prompt_lookup_max': 5, 'nested': {'a': [1, 2.5, null]}}",
    "kubernetes.hf_token_secret=null",
    "kubernetes.node_selector={'zone': 'b', 'nvidia.com/gpu.product': 'NVIDIA-GB300'}",
    "smoke.concurrency=[1, 4, 16]",
    "targets.decode_tok_s=371.5",
]


def _by_key(profile: Profile) -> dict[str, dict[str, Any]]:
    return {f"{m.kind}/{m.name}": m.obj for m in build(profile)}


def _dumped(profile: Profile) -> str:
    return _by_key(profile)[f"ConfigMap/{profile.name}-profile"]["data"]["profile.yaml"]


@pytest.mark.parametrize("name", builtin_names())
def test_dumped_builtin_loads_back_equal(name: str, tmp_path: Path) -> None:
    original = load_profile(name)
    path = tmp_path / "profile.yaml"
    path.write_text(profile_yaml(original), encoding="utf-8")
    assert load_profile(str(path)) == original


def test_dumped_overridden_profile_loads_back_equal(tmp_path: Path) -> None:
    original = load_profile(K3, TRICKY)
    assert (
        original.description == "déjà vu, two lines\n  indented: second\n" and original.vllm.env["VLLM_FLAG"] == "yes"
    )
    path = tmp_path / "profile.yaml"
    path.write_text(_dumped(original), encoding="utf-8")
    loaded = load_profile(str(path))
    assert loaded == original
    assert loaded.speculative is not None
    assert loaded.speculative.extra == {"prompt_lookup_max": 5, "nested": {"a": [1, 2.5, None]}}
    assert yaml.safe_load(path.read_text()) == original.model_dump(mode="json")


def test_dump_is_canonical_whatever_the_source_order() -> None:
    forward = load_profile(K3, ["vllm.env={'A': '1', 'B': '2'}"])
    backward = load_profile(K3, ["vllm.env={'B': '2', 'A': '1'}"])
    assert forward == backward
    assert profile_yaml(forward) == profile_yaml(backward)
    top_keys = [line.split(":")[0] for line in profile_yaml(forward).splitlines() if not line.startswith(" ")]
    assert top_keys == sorted(Profile.model_fields)


def test_configmap_holds_the_overridden_profile_and_the_job_tracks_its_digest() -> None:
    plain, tuned = load_profile(K3), load_profile(K3, ["smoke.requests=3"])
    assert yaml.safe_load(_dumped(tuned))["smoke"]["requests"] == 3
    assert yaml.safe_load(_dumped(plain))["smoke"]["requests"] == 8

    def digest(profile: Profile) -> str:
        job = _by_key(profile)[f"Job/{K3}-smoke"]
        return job["spec"]["template"]["metadata"]["annotations"]["k3deploy/profile-sha256"]

    # A new profile changes the Job's (immutable) pod template, so a rollout replaces the Job and smoke runs again.
    assert digest(plain) != digest(tuned)
    assert digest(plain) == digest(load_profile(K3))
    assert len(digest(plain)) == 64


def test_configmap_comes_before_the_smoke_job_in_apply_order() -> None:
    objects = [m.obj for m in build(load_profile(K3))]
    assert apply_order(objects) == objects
    keys = [f"{o['kind']}/{o['metadata']['name']}" for o in objects]
    assert (
        keys.index(f"ConfigMap/{K3}-profile")
        < keys.index(next(k for k in keys if k.startswith(f"Job/{K3}-prefetch-")))
        < keys.index(f"Job/{K3}-smoke")
    )


def _file_profile(tmp_path: Path) -> Path:
    """The K3 built-in under another name, as a user's own profile file."""
    data = yaml.safe_load(
        resources.files("k3deploy.profile.builtin").joinpath(f"{K3}.yaml").read_text(encoding="utf-8")
    )
    data["name"] = "k3-from-file"
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_smoke_job_args_run_with_a_file_profile_and_its_overrides(tmp_path: Path) -> None:
    sets = [
        "production=false",  # its versions float: render refuses them in production
        f"model.served_name={MODEL}",
        "smoke.requests=2",
        "smoke.output_tokens=16",
        "smoke.correctness=false",
        "smoke.request_timeout_s=10",
        "smoke.overall_timeout_s=60",
        "targets.decode_tok_s=null",
        "targets.min_acceptance_length=null",
        # No cluster here to gate leaders on: the Job's --gate-leaders run is tests/realk8s/test_traffic_gate.py's.
        "smoke.gate_traffic=false",
    ]
    rendered = run_cli(
        "render", "-p", str(_file_profile(tmp_path)), *[a for s in sets for a in ("--set", s)], "-o", "-"
    )
    assert rendered.returncode == 0, rendered.stderr
    docs = {f"{d['kind']}/{d['metadata']['name']}": d for d in yaml.safe_load_all(rendered.stdout)}
    config_map, job = docs["ConfigMap/k3-from-file-profile"], docs["Job/k3-from-file-smoke"]
    profile_file = tmp_path / "profile.yaml"
    profile_file.write_text(config_map["data"]["profile.yaml"], encoding="utf-8")
    assert load_profile(str(profile_file)) == load_profile(str(_file_profile(tmp_path)), sets)

    # Run exactly the Job's args, with the in-cluster URL and mount path pointed at this machine.
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == [
        "smoke",
        "--endpoint",
        "http://k3-from-file-api.kimi-k3.svc:8000",
        "-p",
        PATH_IN_JOB,
        "--wait-ready",
        "7610s",  # the built-in's start-up budget (tests/profile/test_startup_budget.py)
        "-o",
        "json",
    ]
    local = {args[2]: None, PATH_IN_JOB: str(profile_file)}
    with scripted_server(Script(num_speculative_tokens=7)) as srv:
        local[args[2]] = srv.url
        result = run_cli(*[local.get(a) or a for a in args])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["profile"] == "k3-from-file" and report["endpoint"] == srv.url
    assert report["settings"]["requests"] == 2 and report["settings"]["correctness"] is False
    assert report["targets"]["decode_tok_s"] is None
    assert len([r for r in report["requests"] if r["phase"] == "measured"]) == 2
