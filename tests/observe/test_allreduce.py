"""The all-reduce backend as a leader's log reports it: the lines vLLM 0.32 writes
(vllm/distributed/device_communicators/flashinfer_all_reduce.py), and "unknown" when none is there."""

from __future__ import annotations

import threading
from typing import Any

from k3deploy.errors import KubeError
from k3deploy.observe.allreduce import UNKNOWN, backend_from_log
from k3deploy.observe.allreduce_probe import LEADER_LOG_BYTES, leader_backends, leader_selector, summary
from k3deploy.profile import load_profile

PREFIX = "(EngineCore pid=212) INFO 11-30 10:02:11 [flashinfer_all_reduce.py:236] "
MNNVL = PREFIX + "Initialized FlashInfer Allreduce norm fusion workspace with backend=mnnvl"
QUANT = PREFIX + "Initialized FlashInfer Allreduce norm quantization fusion workspace with backend=mnnvl"
FAILED = (
    PREFIX.replace("INFO", "ERROR")
    + "Failed to initialize FlashInfer Allreduce norm fusion workspace with backend=mnnvl"
)
TRTLLM = (
    "ValueError: Flashinfer allreduce is not supported for multi-node allreduce with 'trtllm' backend. "
    "Please use 'mnnvl' backend instead."
)


def test_the_backend_is_read_from_vllms_lines() -> None:
    assert backend_from_log(f"loading weights\n{MNNVL}\n{QUANT}\nApplication startup complete.\n") == "mnnvl"
    assert backend_from_log(MNNVL.replace("mnnvl", "trtllm")) == "trtllm"
    assert backend_from_log(FAILED) == "mnnvl (failed)"
    assert backend_from_log(TRTLLM) == "trtllm (refused across nodes)"


def test_a_log_that_does_not_say_is_unknown() -> None:
    assert backend_from_log("") == UNKNOWN
    assert backend_from_log("INFO Started server process\nINFO Avg prompt throughput: 0.0 tokens/s\n") == UNKNOWN


class _Api:
    """The two KubeApi calls the probe makes (k3deploy/kube/api.py list and read_log), answering from a dict."""

    def __init__(self, logs: dict[str, str | None]) -> None:
        self.logs, self.calls = logs, []

    def list(self, api_version: str, kind: str, namespace: str, *, label_selector: str) -> tuple[list[Any], str]:
        self.calls.append(("list", kind, namespace, label_selector))
        return [{"metadata": {"name": name}} for name in self.logs], "1"

    def read_log(self, name: str, namespace: str, container: str, *, limit_bytes: int) -> str:
        self.calls.append(("log", name, container, limit_bytes))
        text = self.logs[name]
        if text is None:
            raise KubeError(f"read the log of pod {name}: container not started", status=400, reason="BadRequest")
        return text


def test_each_leaders_log_is_read_from_its_start_and_summarised() -> None:
    profile = load_profile("kimi-k3-gb300-tp16")
    api = _Api({"kimi-k3-gb300-tp16-0": MNNVL, "kimi-k3-gb300-tp16-1": None})
    found = leader_backends(api, profile)
    assert found == {"kimi-k3-gb300-tp16-0": "mnnvl", "kimi-k3-gb300-tp16-1": UNKNOWN}
    assert api.calls[0] == ("list", "Pod", "kimi-k3", leader_selector(profile))
    assert "leaderworkerset.sigs.k8s.io/worker-index=0" in leader_selector(profile)
    assert ("log", "kimi-k3-gb300-tp16-0", "vllm", LEADER_LOG_BYTES) in api.calls
    assert summary(found) == f"kimi-k3-gb300-tp16-0: mnnvl, kimi-k3-gb300-tp16-1: {UNKNOWN}"
    assert summary({"a": "mnnvl", "b": "mnnvl"}) == "mnnvl" and summary({}) == UNKNOWN


class _MeetingApi(_Api):
    """_Api whose log reads wait until `parties` of them are under way at once (a read that waits alone, as the
    reads of a loop one after another would, never returns its log)."""

    def __init__(self, logs: dict[str, str | None], parties: int) -> None:
        super().__init__(logs)
        self.barrier = threading.Barrier(parties)

    def read_log(self, name: str, namespace: str, container: str, *, limit_bytes: int) -> str:
        try:
            self.barrier.wait(timeout=30)
        except threading.BrokenBarrierError:
            raise KubeError(f"read the log of pod {name}: read alone", status=500, reason="Alone") from None
        return super().read_log(name, namespace, container, limit_bytes=limit_bytes)


def test_the_leaders_logs_are_read_at_once_not_one_after_another() -> None:
    logs: dict[str, str | None] = {f"kimi-k3-gb300-tp16-{i}": MNNVL for i in range(4)}
    found = leader_backends(_MeetingApi(logs, parties=4), load_profile("kimi-k3-gb300-tp16"))
    assert found == dict.fromkeys(logs, "mnnvl")
