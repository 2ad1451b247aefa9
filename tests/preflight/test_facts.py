"""Pure parsers of preflight facts and the profile checks (pinned revisions, capacity plan)."""

from __future__ import annotations

import pytest

from k3deploy.preflight.checks import capacity_check
from k3deploy.preflight.facts import (
    cuda_version_from_int,
    format_fabric_uuid,
    normalize_arch,
    parse_compute_caps,
    parse_nvidia_smi_xml,
    version_tuple,
)
from k3deploy.profile import load_profile
from k3deploy.report.model import Status


def test_small_parsers() -> None:
    assert version_tuple("580.95.05") == (580, 95, 5)
    assert version_tuple("v1.34.1-gke.1200") == (1, 34, 1)
    assert version_tuple("v1.33.0+k3s1") == (1, 33, 0)
    assert cuda_version_from_int(13000) == "13.0" and cuda_version_from_int(12090) == "12.9"
    assert normalize_arch("aarch64") == "arm64" and normalize_arch("x86_64") == "amd64"
    assert format_fabric_uuid(bytes(16)) is None
    assert (
        format_fabric_uuid(bytes.fromhex("4a2c8e6193d74b5ea0f26c1d9e8b7a35")) == "4a2c8e61-93d7-4b5e-a0f2-6c1d9e8b7a35"
    )
    assert parse_compute_caps("0, 10.3\n1, 10.3\n\n") == {0: "10.3", 1: "10.3"}


def test_xml_parser_reads_mig_on_and_in_progress_fabric() -> None:
    xml = """<nvidia_smi_log><driver_version>580.95.05</driver_version><cuda_version>13.0</cuda_version>
    <gpu id="00000008:01:00.0"><product_name>NVIDIA GB300</product_name><persistence_mode>Disabled</persistence_mode>
    <mig_mode><current_mig>Enabled</current_mig></mig_mode><fb_memory_usage><total>284208 MiB</total></fb_memory_usage>
    <gpu_recovery_action>Drain and Reset</gpu_recovery_action>
    <ecc_errors><volatile><sram_uncorrectable_parity>1</sram_uncorrectable_parity><dram_uncorrectable>2</dram_uncorrectable>
    <dram_correctable>9</dram_correctable></volatile></ecc_errors>
    <fabric><state>In Progress</state><status>N/A</status><cliqueId>N/A</cliqueId>
    <clusterUuid>00000000-0000-0000-0000-000000000000</clusterUuid></fabric>
    </gpu></nvidia_smi_log>"""
    gpu = parse_nvidia_smi_xml(xml).gpus[0]
    assert (gpu.mig_enabled, gpu.persistence_mode, gpu.recovery_action) == (True, False, "Drain and Reset")
    assert gpu.uncorrectable_ecc_volatile == 3
    assert (gpu.fabric_state, gpu.fabric_status, gpu.clique) == ("In Progress", None, None)
    assert gpu.pci_bus_id == "00000008:01:00.0" and gpu.compute_capability is None


@pytest.mark.parametrize(
    "xml,message",
    [("<oops", "malformed XML"), ("<other/>", "not <nvidia_smi_log>"), ("<nvidia_smi_log/>", "lacks driver_version")],
)
def test_xml_parser_rejects_what_is_not_nvidia_smi(xml: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_nvidia_smi_xml(xml)


def test_capacity_plan_is_a_check_with_numbers() -> None:
    ok = capacity_check(load_profile("kimi-k3-gb300-tp16"))
    assert (ok.status, ok.measured, ok.target) == (
        Status.PASS,
        "99.2 GiB fixed + 16.68 GiB per 1048576-token sequence",
        "<= 255.3 GiB usable per GPU",
    )
    assert ok.detail == "9 sequences of 1048576 tokens fit per GPU (10035456 KV tokens)"
    bad = capacity_check(load_profile("kimi-k3-gb300-tp16", ["hardware.gpu_memory_mib=115000"]))
    assert (bad.status, bad.target) == (Status.FAIL, "<= 103.3 GiB usable per GPU")
    assert bad.detail == "no room for one 1048576-token sequence: needs 16.68 GiB, 4.10 GiB left per GPU after weights"
    assert "lower vllm.max_model_len" in (bad.hint or "")
    assert capacity_check(load_profile("local-cpu")).status is Status.SKIP
