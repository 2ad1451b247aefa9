"""`pin` keeps the profile as written: comments, key order and quoting, only the pinned values changed."""

from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path

from k3deploy.pin import roundtrip
from tests.conftest import run_cli
from tests.pin.distribution import Distribution
from tests.pin.test_cli import PROFILE, _publish

MINE = """\
# My site's K3 profile.
name: my-k3   # the release name
vllm:
  # the server
  port: 8000
  image: "vllm/vllm-openai:kimi-k3-aarch64-cu130"
  extra_args:
    - --a
    - --b
"""


def test_comments_order_and_quotes_survive_a_set_and_a_pin(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(MINE)
    data = roundtrip.document(str(path), ["vllm.port=9000", "vllm.extra_args[1]=--c"])
    data["vllm"]["image"] = "vllm/vllm-openai:kimi-k3-aarch64-cu130@sha256:" + "0" * 64
    assert roundtrip.dump(data) == MINE.replace("port: 8000", "port: 9000").replace("--b", "--c").replace(
        'cu130"', "cu130@sha256:" + "0" * 64 + '"'
    )


def test_an_old_header_is_not_repeated() -> None:
    assert roundtrip.dump({"a": 1}, skip_first_line="a:") == ""
    assert roundtrip.dump({"a": 1, "b": 2}, skip_first_line="a:") == "b: 2\n"


def test_pin_of_the_builtin_profile_changes_only_the_pinned_lines(
    pin_env: dict[str, str], registry: Distribution, tmp_path: Path
) -> None:
    _publish(registry, ["arm64"])
    out = tmp_path / "pinned.yaml"
    result = run_cli("pin", "-p", PROFILE, "-o", str(out), env=pin_env)
    assert result.returncode == 0, result.stderr
    original = resources.files("k3deploy.profile.builtin").joinpath(f"{PROFILE}.yaml").read_text().splitlines()
    written = out.read_text().splitlines()
    assert written[0].startswith("# Pinned profile written by `k3deploy pin` from built-in profile")
    changed = [line for line in difflib.ndiff(original, written[1:]) if line[:2] in ("- ", "+ ")]
    assert changed and all(
        any(key in line for key in ("revision:", "image:", "prefetch_image:")) for line in changed
    ), [line for line in changed if not any(k in line for k in ("revision:", "image:", "prefetch_image:"))]
    assert (
        sum(line.lstrip("+- ").startswith("#") for line in written)
        == sum(line.lstrip().startswith("#") for line in original) + 1
    )  # every comment kept, plus the header
