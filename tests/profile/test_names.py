"""The Kubernetes grammars of k3deploy/profile/names.py, on cases taken from the upstream validators' own tests
(kubernetes/apimachinery pkg/util/validation/validation_test.go, pkg/api/resource/quantity_test.go,
distribution/reference reference_test.go)."""

from __future__ import annotations

from decimal import Decimal

import pytest

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
