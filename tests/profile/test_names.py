"""The Kubernetes grammars of k3deploy/profile/names.py, on cases taken from the upstream validators' own tests
(kubernetes/apimachinery pkg/util/validation/validation_test.go, pkg/api/resource/quantity_test.go,
distribution/reference reference_test.go)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from k3deploy.profile import load_profile
from k3deploy.profile.names import (
    check_config_key,
    check_dns_label,
    check_dns_subdomain,
    check_env_name,
    check_http_url,
    check_label_key,
    check_label_value,
    check_pinned_image,
    check_quantity,
    quantity_bytes,
    quantity_value,
)

GRAMMARS = {
    check_dns_label: (
        ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", "1--a--b--2", "a" * 63],
        [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            "a" * 64,
            "a\n",
            "\uff41",
        ],
    ),
    check_dns_subdomain: (
        ["a", "ab", "a.b", "a--1--2--b", "0", "1-a", "a.1", "1.2.3.4", "a." * 126 + "a", "k3deploy"],
        ["", "A", "a..b", "a-.b", ".a", "a.", "a_b", "a/b", "a/../../x", "Not_Valid", "a" * 254, "a.b\n"],
    ),
    check_label_key: (
        [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
            "a" * 63,
            "a" * 253 + "/" + "b" * 63,
            "nvidia.com/gpu.clique",
        ],
        [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
            "a" * 64,
            "a" * 254 + "/abc",
            "",
        ],
    ),
    check_label_value: (
        [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "",
            "a" * 63,
            "Uppercase_Is_OK_123",
            "NVIDIA-GB300",
        ],
        [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
            "a" * 64,
            "NVIDIA GB300",
        ],
    ),
    check_config_key: (
        ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "A", "AB", "AbC", "a_b", ".a", ".a.b", "token"],
        ["", ".", "..", "..a", "a/b", "a b", "a" * 254],
    ),
    check_env_name: (
        ["A", "my.env-name", "MY_ENV.NAME", "MyEnvName1", "1ABC", "A B", "~!@#"],
        ["", "A=B", "é", "A\n", "A\x7f"],
    ),
    check_quantity: (
        [
            "0",
            "0n",
            "0u",
            "0m",
            "0Ki",
            "0k",
            "0Mi",
            "0M",
            "1",
            "1.",
            ".1",
            "1.1",
            "+1",
            "1e3",
            "1E+3",
            "1e-3",
            "100m",
            "1n",
            "1u",
            "1k",
            "1Ki",
            "1M",
            "1Mi",
            "1G",
            "1Gi",
            "1T",
            "1Ti",
            "1P",
            "1Pi",
            "1E",
            "1Ei",
            "32",
            "512Gi",
            "1.5Ti",
            "0.5",
            "12e6",
        ],
        [
            "",
            "lots",
            "1.1.1",
            "1+1",
            "1i",
            "1Kk",
            "1 Gi",
            " 1",
            "1 ",
            "1KB",
            "1GB",
            "1e",
            "1e1.5",
            "-1",
            "-0.5Gi",
            "1mi",
            "1Ki1",
            "+",
            "-",
            ".",
            "1\n",
            "\u0661",
        ],
    ),
    check_pinned_image: (
        [
            "python:3.12-slim",
            "vllm/vllm-openai:kimi-k3-aarch64-cu130",
            "ghcr.io/k3deploy/k3deploy:0.1.0",
            "localhost:5000/foo/bar:tag",
            "[::1]:5000/foo:tag",
            "a@sha256:" + "f" * 64,
            "a:tag@sha256:" + "f" * 64,
            "foo_bar.com:8080",
            "a" * 255 + ":t",
        ],
        [
            "vllm/vllm-openai",
            "localhost:5000/foo",
            "Uppercase:tag",
            "a:",
            "a:-tag",
            "a@sha256:abc",
            "a:b:c",
            "a@sha256:" + "f" * 63,
            " a:tag",
            "a:tag ",
            "a" * 256 + ":t",
            "a:" + "t" * 129,
            "a:tàg",
        ],
    ),
    check_http_url: (
        ["http://127.0.0.1:8000", "https://api.example.com", "http://[::1]:8000", "http://h:65535/v1"],
        [
            "http://127.0.0.1:99999",
            "http://127.0.0.1:-1",
            "http://h:0",
            "http://[::1:80",
            "http://[zz::1]:80",
            "ftp://h",
            "h:8000",
            "http://",
            "http://:80",
            "http://h\n:80",
            "http://h x",
        ],
    ),
}
CASES = [
    (check, value, ok)
    for check, (good, bad) in GRAMMARS.items()
    for ok, values in ((True, good), (False, bad))
    for value in values
]


@pytest.mark.parametrize(("check", "value", "ok"), CASES, ids=[f"{c.__name__}-{ok}-{v[:20]!r}" for c, v, ok in CASES])
def test_grammar(check, value: str, ok: bool) -> None:
    if ok:
        assert check(value) == value
    else:
        with pytest.raises(ValueError):
            check(value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("64Gi", Decimal(64 * 2**30)),
        ("500m", Decimal("0.5")),
        ("1.5k", Decimal(1500)),
        ("1e3", Decimal(1000)),
        ("1.", Decimal(1)),
        (".5", Decimal("0.5")),
        ("-1", Decimal(-1)),
        ("2Ti", Decimal(2 * 2**40)),
    ],
)
def test_quantity_value(text: str, value: Decimal) -> None:
    assert quantity_value(text) == value


# -- the one quantity parser, at its boundaries --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2Ti", 2 * 2**40),
        ("64Gi", 64 * 2**30),
        ("1500G", 1_500_000_000_000),
        ("1.5T", 1_500_000_000_000),
        ("512", 512),
        ("3000Gi", 3000 * 2**30),
        ("1e12", 10**12),
        ("0", 0),
        ("500m", 1),  # Quantity.Value() rounds up
        ("1001m", 2),
        ("1n", 1),
        ("1.1Gi", 1181116007),  # 1.1 * 2**30 = 1181116006.4, rounded up (the old float parser truncated)
        ("8Ei", 8 * 2**60),  # past int64: a size, not a Go int64
    ],
)
def test_quantity_bytes(text: str, expected: int) -> None:
    assert quantity_bytes(text) == expected


@pytest.mark.parametrize("bad", ["", "2TB", "lots", "-1Gi", "1K", "1 Gi", " 1", "1_000", "Infinity", "NaN", "1e3Gi"])
def test_quantity_bytes_refuses_what_quantity_go_refuses(bad: str) -> None:
    with pytest.raises(ValueError):
        quantity_bytes(bad)


@pytest.mark.parametrize(
    "text", ["64Gi", "500m", "1.5k", "1e3", ".5", "1.", "2Ti", "100M", "7Ei", "3n", "250u", "0", "+1", "-2Mi", "12E"]
)
def test_quantity_value_agrees_with_the_kubernetes_client_where_both_parse(text: str) -> None:
    """kubernetes.utils.parse_quantity is looser (it takes `1K`, `Infinity`, `1_000`), so it is no oracle for what
    to refuse; on the forms both read, the numbers are the same."""
    from kubernetes.utils import parse_quantity

    assert quantity_value(text) == parse_quantity(text)


def test_a_size_the_profile_accepts_is_one_preflight_can_read() -> None:
    """The two parsers disagreed: the profile took `3e12` and `2000000000000000m` for model_cache_size, preflight's
    own parser raised on them mid-run. Now every size the profile's validator accepts is a size preflight reads."""
    from k3deploy.preflight.checks_storage import storage_checks
    from tests.preflight.test_checks_cluster import facts, gb300

    for size in ("3e12", "3000000000000000m", "3T"):
        profile = load_profile("kimi-k3-gb300-tp16", [f"kubernetes.model_cache_size={size}"])
        results = {r.name: r for r in storage_checks(profile, facts([gb300(f"n{i}", None) for i in range(4)]))}
        assert results["k8s.cache_size"].measured == size
