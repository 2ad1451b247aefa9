"""Load, plan and render under generated input (hypothesis): whatever profile text or `--set` it is given, the
pipeline either succeeds or raises k3deploy's one error type (an `error:`/`hint:` pair and exit 2 or 3 at the CLI),
never another exception (which the CLI reports as "unexpected ... report it").

Runs in-process on the functions `render` and `plan` call (no subprocess, no network), so it is fast: the unit tier
runs `K3DEPLOY_PROPERTY_EXAMPLES` examples per test (default 300); the full figure is run by hand with
`K3DEPLOY_PROPERTY_EXAMPLES=10000 .venv/bin/python -m pytest tests/profile/test_pipeline_properties.py -p no:xdist`.
The generated text aims at what the YAML loader and the model meet in the wild: dates, `!!binary`, other tags,
duplicate keys, NUL bytes, deep and long dotted keys, numbers where strings belong, lone surrogates.
"""

from __future__ import annotations

import os
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3deploy.errors import K3DeployError
from k3deploy.profile import load_profile
from k3deploy.profile.plan import plan
from k3deploy.targets import target_for
from tests.conftest import REPO_ROOT

EXAMPLES = int(os.environ.get("K3DEPLOY_PROPERTY_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
BUILTINS = ("kimi-k3-gb300-tp16", "local-cpu")


def _leaf_paths(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        return [p for key, value in node.items() for p in _leaf_paths(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")]


KNOWN = sorted(
    {
        p
        for name in BUILTINS
        for p in _leaf_paths(yaml.safe_load((REPO_ROOT / "k3deploy/profile/builtin" / f"{name}.yaml").read_text()))
    }
    | {"vllm.env.X", "vllm.extra_args", "vllm.extra_args[0]", "speculative.extra.k", "kubernetes.node_selector.a"}
    | {"kubernetes.lws_version", "vllm.attention_config", "kubernetes.registry_mirrors.docker.io", "model.id"}
)
YAML_VALUES = [
    "2024-01-01",
    "2024-01-01T10:00:00Z",
    "!!binary aGVsbG8=",
    "!!timestamp 2001-12-14",
    "!!set {a, b}",
    "!!python/object:os.system x",
    "!!omap [a: 1]",
    "!!float 1e999",
    "0.9",
    "0x10",
    "1_000",
    ".inf",
    ".nan",
    "~",
    "'a\\0b'",
    '"a\\0b"',
    '"\\ud800"',
    '"\\x1b[31mred"',
    '{"A": "b\\u0000c"}',
    '["--x\\u0000"]',
    "[" * 40 + "]" * 40,
    "{a: 1, a: 2}",
    "-1",
    "1e400",
    "99999999999999999999999999",
    "true",
    "http://[::1",
    "a\x00b",
]
segment = st.one_of(
    st.sampled_from(["a", "vllm", "env", "x", "[0]", "extra_args", "extra", "0"]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6),
)
FREE_FORM = ["speculative.extra", "vllm.attention_config", "vllm.env", "kubernetes.node_selector", "vllm.extra_args"]
deep_key = st.one_of(st.lists(segment, min_size=1, max_size=8), st.integers(20, 2000).map(lambda n: ["a"] * n)).map(
    ".".join
)
set_key = st.one_of(
    st.sampled_from(KNOWN),
    st.sampled_from(FREE_FORM + KNOWN).flatmap(lambda k: deep_key.map(lambda d: f"{k}.{d}")),
    deep_key,
)
set_value = st.one_of(st.sampled_from(YAML_VALUES), st.text(max_size=30))
sets = st.lists(st.tuples(set_key, set_value).map(lambda kv: f"{kv[0]}={kv[1]}"), max_size=4)


def _profile_text(base: str, extra_lines: list[str]) -> str:
    return f"name: {base}\n" + "".join(line + "\n" for line in extra_lines)


yaml_line = st.one_of(
    st.builds(
        lambda key, value: f"{key}: {value}",
        st.sampled_from(["name", "vllm", "model", "description", "extends", "target", "production"]),
        st.sampled_from(YAML_VALUES),
    ),
    st.builds(
        lambda section, key, value: f"{section}:\n  {key}:\n    k: {value}\n    k2: {value}",
        st.sampled_from(["speculative", "vllm", "kubernetes"]),
        st.sampled_from(["extra", "attention_config", "env", "node_selector"]),
        st.sampled_from(YAML_VALUES),
    ),
)


def _through_the_pipeline(ref: str | list[str], overrides: list[str]) -> None:
    try:
        profile = load_profile(ref, overrides)
        plan(profile)
        target_for(profile).render(profile)
    except K3DeployError:
        pass


@SETTINGS
@given(base=st.sampled_from(BUILTINS), overrides=sets)
def test_generated_sets_end_in_a_k3deploy_error_or_a_rendering(base: str, overrides: list[str]) -> None:
    _through_the_pipeline(base, overrides)


@SETTINGS
@given(base=st.sampled_from(BUILTINS), lines=st.lists(yaml_line, max_size=4), overrides=sets)
def test_generated_profile_files_end_in_a_k3deploy_error_or_a_rendering(
    tmp_path_factory: Any, base: str, lines: list[str], overrides: list[str]
) -> None:
    layer = tmp_path_factory.mktemp("p") / "layer.yaml"
    layer.write_text(_profile_text(base, lines), encoding="utf-8", errors="surrogatepass")
    _through_the_pipeline([base, str(layer)], overrides)
