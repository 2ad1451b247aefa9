"""`up --strategy blue-green` refuses a name whose green colour cannot make pods, before it reads the cluster."""

from __future__ import annotations

from tests.conftest import run_cli


def test_blue_green_refuses_a_45_character_name_with_the_reason() -> None:
    name = "k" * 45
    result = run_cli(
        "up", "-p", "kimi-k3-gb300-tp16", "--set", f"name={name}", "--strategy", "blue-green",
        "--kubeconfig", "/nonexistent/kubeconfig",
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"error: --strategy blue-green: name '{name}' is 45 characters, above 44")
    assert f"{name}-green-0" in lines[0] and "controller-revision-hash" in lines[0]
    assert lines[1].startswith("hint: ") and "Traceback" not in result.stderr
