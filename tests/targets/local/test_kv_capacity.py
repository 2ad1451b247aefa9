"""`up` on the local target shows the plan's KV tokens beside those the server logged at start-up (wait's detail)."""

from __future__ import annotations

from pathlib import Path

from k3deploy.profile import load_profile
from k3deploy.targets.local.target import kv_capacity
from tests.profile.test_plan_check import CPU_LINE


def test_wait_reports_plan_and_server_side_by_side(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"INFO starting\n{CPU_LINE}\nINFO Application startup complete.\n", encoding="utf-8")
    assert kv_capacity(load_profile("local-cpu"), log) == "KV tokens: plan 524,288, server 524,288 (+0.0%)"


def test_a_plan_the_server_contradicts_is_flagged(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(CPU_LINE + "\n", encoding="utf-8")
    detail = kv_capacity(load_profile("local-cpu", ["speculative.draft_kv_layers=0"]), log)
    assert detail == "KV tokens: plan 1,048,576, server 524,288 (+100.0%, off by more than 5%)"


def test_no_log_yet(tmp_path: Path) -> None:
    assert (
        kv_capacity(load_profile("local-cpu"), tmp_path / "missing.log")
        == "KV tokens: plan 524,288, server not reported"
    )


def test_only_the_end_of_a_long_log_is_read(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(CPU_LINE + "\n" + "x" * (9 * 1024 * 1024) + "\n", encoding="utf-8")
    assert kv_capacity(load_profile("local-cpu"), log) == "KV tokens: plan 524,288, server not reported"
