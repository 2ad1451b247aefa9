"""What the local target runs: the exact argv and environment, where its files go, and when it counts as changed."""

from __future__ import annotations

from pathlib import Path

from k3deploy.profile import load_profile
from k3deploy.targets.local.launch import argv_hash, default_state_dir, model_path, plan_launch, resolved, scratch_dir


def test_state_dir_defaults_to_the_user_cache_per_profile() -> None:
    profile = load_profile("local-cpu")
    assert default_state_dir(profile, Path("/home/u")) == Path("/home/u/.cache/k3deploy/local-cpu")
    assert default_state_dir(profile, Path("/home/u"), "/xdg") == Path("/xdg/k3deploy/local-cpu")
    chosen = load_profile("local-cpu", ["local.state_dir=/srv/k3"])
    assert default_state_dir(chosen, Path("/home/u"), "/xdg") == Path("/srv/k3")


def test_rehearsal_launch_is_the_exact_argv_with_the_generated_folder_as_model_and_draft() -> None:
    launch = plan_launch(load_profile("local-cpu"), Path("/s"), "/py/bin/python", Path("/t"))
    assert launch.argv == [
        "/py/bin/python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/s/model",
        "--served-model-name",
        "rehearsal-llama-tiny",
        "--tensor-parallel-size",
        "1",
        "--host",
        "127.0.0.1",
        "--port",
        "18431",
        "--max-model-len",
        "1024",
        "--gpu-memory-utilization",
        "0.9",
        "--dtype",
        "float32",
        "--enforce-eager",
        "--speculative-config",
        '{"method":"draft_model","model":"/s/model","num_speculative_tokens":3}',
    ]
    assert launch.env == {
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "TMPDIR": str(launch.scratch),
        "VLLM_CACHE_ROOT": "/s/vllm-cache",
    }
    assert launch.log_path == Path("/s/server.log")
    assert launch.model_path == "/s/model"


def test_real_model_is_used_as_given_and_its_draft_untouched() -> None:
    profile = load_profile(
        "local-cpu", ["model.rehearsal=false", "model.id=/models/llama", "speculative.model=/models/draft"]
    )
    assert model_path(profile, Path("/s")) == "/models/llama"
    assert resolved(profile, Path("/s")) is profile
    argv = plan_launch(profile, Path("/s"), "python3", Path("/t")).argv
    assert argv[3:5] == ["--model", "/models/llama"]
    assert (
        argv[argv.index("--speculative-config") + 1]
        == '{"method":"draft_model","model":"/models/draft","num_speculative_tokens":3}'
    )
    hub = load_profile("local-cpu", ["model.rehearsal=false", "model.id=org/name"])
    assert plan_launch(hub, Path("/s"), "python3", Path("/t")).argv[3:5] == ["--model", "org/name"]


def test_model_free_speculation_is_not_rewritten() -> None:
    profile = load_profile(
        "local-cpu", ['speculative={"method": "ngram", "num_speculative_tokens": 3, "extra": {"prompt_lookup_max": 4}}']
    )
    argv = plan_launch(profile, Path("/s"), "python3", Path("/t")).argv
    assert (
        argv[argv.index("--speculative-config") + 1]
        == '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":4}'
    )


def test_hash_is_stable_and_follows_argv_and_env() -> None:
    base = plan_launch(load_profile("local-cpu"), Path("/s"), "python3", Path("/t"))
    assert base.argv_hash == plan_launch(load_profile("local-cpu"), Path("/s"), "python3", Path("/t")).argv_hash
    assert base.argv_hash == argv_hash(base.argv, base.env)
    other_port = plan_launch(load_profile("local-cpu", ["vllm.port=18500"]), Path("/s"), "python3", Path("/t"))
    other_env = plan_launch(
        load_profile("local-cpu", ["vllm.env.VLLM_CPU_KVCACHE_SPACE='2'"]), Path("/s"), "python3", Path("/t")
    )
    # Smoke settings and targets do not change what runs: the same server is reused.
    targets_only = plan_launch(
        load_profile("local-cpu", ["targets.decode_tok_s=1000"]), Path("/s"), "python3", Path("/t")
    )
    assert len({base.argv_hash, other_port.argv_hash, other_env.argv_hash}) == 3
    assert targets_only.argv_hash == base.argv_hash


def test_scratch_dir_is_short_and_unique_per_state_dir() -> None:
    deep = Path("/home/someone/" + "very-long-folder-name/" * 8 + "state")
    scratch = scratch_dir(deep, Path("/tmp"))
    assert scratch.parent == Path("/tmp") and scratch.name.startswith("k3deploy-")
    # vLLM puts "<uuid4>" socket files in TMPDIR; "ipc://" + path must stay within the 107-byte limit.
    assert len(f"{scratch}/{'0' * 36}") <= 107 - len("ipc://")
    assert scratch == scratch_dir(deep, Path("/tmp"))
    assert scratch != scratch_dir(Path("/other/state"), Path("/tmp"))
