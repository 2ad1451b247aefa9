"""The CLI's contract under generated input (hypothesis): whatever profile, `--set` value, duration or URL it is
given, it ends with exit 0, 1, 2 or 3, and when non-zero with exactly one `error:` line, never a traceback and never
an "unexpected" error. Most examples run in-process through `main()` (fast); a few through a real subprocess.

No network: endpoints are 127.0.0.1 / ::1 on a port found closed, kubeconfigs point at that port too, timeouts short.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO_ROOT, run_cli, run_cli_process
from tests.ports import free_port
from tests.support.kubeconfig import write_kubeconfig

K3 = "kimi-k3-gb300-tp16"
BUILTINS = {
    name: yaml.safe_load((REPO_ROOT / "k3deploy" / "profile" / "builtin" / f"{name}.yaml").read_text())
    for name in (K3, "local-cpu")
}
FAST = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# Closed once free_port returns: nothing listens there. Below the kernel's ephemeral range on purpose: a port bound
# to 0 comes from that range, and a client connecting to 127.0.0.1 on such a port with nothing listening can be
# given the same port as its own source port, and so connect to itself (TCP simultaneous open).
CLOSED = free_port()


def _leaf_paths(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        return [p for key, value in node.items() for p in _leaf_paths(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")]


PATHS = sorted(
    {p for data in BUILTINS.values() for p in _leaf_paths(data)}
    | {
        "kubernetes.node_selector",
        "speculative.extra",
        "vllm.attention_config",
        "kubernetes.hf_token_secret",
        "vllm.env",
        "smoke.concurrency",
        "no_such.field",
        "vllm.no_such_field",
    }
)

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    text,
    st.sampled_from(
        [
            "512Gi",
            "lots",
            "-1",
            "a/../../x",
            "Not_Valid",
            "vllm/vllm-openai",
            "python:3",
            "http://127.0.0.1:99999",
            "0",
            "",
            "1e999",
            "{a: 1}",
            "[1, 2",
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=12,
)


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


def _run_in_process(*args: str) -> tuple[int, str, str]:
    result = run_cli(*args)
    return result.returncode, result.stdout, result.stderr


def _assert_contract(code: int, stderr: str, args: tuple[str, ...] | list[str]) -> None:
    shown = f"args={list(args)!r}\nstderr={stderr[-2000:]}"
    assert code in (0, 1, 2, 3), shown
    assert "Traceback" not in stderr and "unexpected " not in stderr, shown
    if code:
        assert sum(line.startswith("error: ") for line in stderr.splitlines()) == 1, shown


@FAST
@given(
    base=st.sampled_from(sorted(BUILTINS)),
    changes=st.lists(st.tuples(st.sampled_from(PATHS), values), max_size=4),
    command=st.sampled_from(["render", "plan"]),
)
def test_generated_profile_files(
    tmp_path_factory: pytest.TempPathFactory, base: str, changes: list[tuple[str, Any]], command: str
) -> None:
    data = yaml.safe_load(yaml.safe_dump(BUILTINS[base]))
    for path, value in changes:
        _set(data, path, value)
    profile = tmp_path_factory.mktemp("p") / "profile.yaml"
    profile.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    args = (command, "-p", str(profile)) + (("-o", "-") if command == "render" else ())
    code, _, stderr = _run_in_process(*args)
    _assert_contract(code, stderr, args)


@FAST
@given(
    raw=st.one_of(
        st.binary(max_size=200),
        text.map(lambda t: t.encode("utf-8")),
        st.sampled_from([b"name: x\n  a: [", b"a: &x [1]\nb: *x\n", b"[" * 300, b"\xef\xbb\xbfname: x\n"]),
    )
)
def test_generated_profile_bytes(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    profile = tmp_path_factory.mktemp("p") / "profile.yaml"
    profile.write_bytes(raw)
    code, _, stderr = _run_in_process("render", "-p", str(profile), "-o", "-")
    assert code != 0 or raw  # an empty file is not a profile
    _assert_contract(code, stderr, ["render", str(raw[:60])])


@FAST
@given(
    sets=st.lists(st.tuples(st.one_of(st.sampled_from(PATHS), text), text), min_size=1, max_size=3),
    base=st.sampled_from([K3, "local-cpu"]),
)
def test_generated_set_values(sets: list[tuple[str, str]], base: str) -> None:
    args = ["render", "-p", base, "-o", "-"]
    for key, value in sets:
        args += ["--set", f"{key}={value}"]
    code, _, stderr = _run_in_process(*args)
    _assert_contract(code, stderr, args)


durations = st.one_of(
    text,
    st.sampled_from(
        ["nan", "inf", "-inf", "-5s", "0", "1e999", "1h30m", "90", "5m", "0.001s", "NaN", "1e-300", "9" * 400, "1h-1m"]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@pytest.fixture(scope="module")
def closed_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig", f"http://127.0.0.1:{CLOSED}")


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(duration=durations)
def test_generated_durations(closed_kubeconfig: Path, duration: str) -> None:
    args = ["apply", "-p", K3, "--kubeconfig", str(closed_kubeconfig), "--timeout", duration]
    code, _, stderr = _run_in_process(*args)
    _assert_contract(code, stderr, args)
    assert code in (2, 3), (args, stderr)  # a bad duration (2) or the closed port (3): never a deployment


hosts = st.sampled_from(
    ["127.0.0.1", "[::1]", "[::1", "[zz::1]", "", "127.0.0.1:", "[::ffff:127.0.0.1]", "user@127.0.0.1"]
)
ports = st.one_of(st.just(str(CLOSED)), st.sampled_from(["0", "65536", "99999", "-1", "80a", "", "1" * 30]))
urls = st.one_of(
    st.builds(
        lambda scheme, host, port, path: f"{scheme}{host}{':' + port if port is not None else ''}{path}",
        st.sampled_from(["http://", "https://", "ftp://", "", "http:/", "HTTP://"]),
        hosts,
        st.none() | ports,
        st.sampled_from(["", "/", "/v1", "/v1/", "?q=1", "#f", "/a b", "/%zz"]) | text.map(lambda t: "/" + t),
    ),
    text,
)


@settings(max_examples=40, deadline=None, database=None)
@given(url=urls)
def test_generated_endpoint_urls(url: str) -> None:
    args = ["smoke", "-p", "local-cpu", "--endpoint", url, "--request-timeout", "2", "--overall-timeout", "5"]
    code, _, stderr = _run_in_process(*args)
    _assert_contract(code, stderr, args)


@settings(max_examples=6, deadline=None, database=None)
@given(
    case=st.sampled_from(
        [
            ("render", "-p", K3, "--set", "speculative.extra={a: &x [1], b: *x}"),
            ("render", "-p", K3, "--set", "kubernetes.memory_request=lots"),
            ("plan", "-p", K3, "--set", "model.checkpoint_bytes=9000000000000"),
            ("smoke", "-p", "local-cpu", "--endpoint", "http://127.0.0.1:99999"),
            ("smoke", "-p", "local-cpu", "--endpoint", "http://[zz::1]:80"),
            ("smoke", "-p", "local-cpu", "--endpoint", f"http://127.0.0.1:{CLOSED}", "--overall-timeout", "5"),
            ("render", "-p", K3, "--set", "kubernetes.service_account=a/../../x", "-o", "-"),
        ]
    )
)
def test_through_the_real_subprocess(case: tuple[str, ...]) -> None:
    result = run_cli_process(*case, timeout=60)
    _assert_contract(result.returncode, result.stderr, case)
    assert result.returncode != 0
