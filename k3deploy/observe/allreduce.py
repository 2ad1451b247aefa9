"""Which cross-node all-reduce backend a vLLM server runs, read from its log. Pure.

vLLM 0.32 logs it once per process when FlashInfer's all-reduce fusion workspace comes up
(vllm/distributed/device_communicators/flashinfer_all_reduce.py: "Initialized FlashInfer Allreduce norm fusion
workspace with backend=mnnvl", the quantization workspace likewise, "Failed to initialize ... with backend=..."
when it cannot), and refuses trtllm across nodes ("... multi-node allreduce with 'trtllm' backend"). A log without
any of them, or one whose start-up lines were cut off, says nothing: the backend is then "unknown".
"""

from __future__ import annotations

import re

UNKNOWN = "unknown"

_INITIALIZED = re.compile(
    r"(?P<outcome>Initialized|Failed to initialize) FlashInfer Allreduce norm (?:quantization )?fusion workspace "
    r"with backend=(?P<backend>[A-Za-z0-9_]+)"
)
_TRTLLM_REFUSED = "multi-node allreduce with 'trtllm' backend"


def backend_from_log(text: str) -> str:
    """The backend the log's last FlashInfer all-reduce line reports: `mnnvl`, `trtllm`, `<backend> (failed)` when
    the workspace could not be made, or UNKNOWN when the log does not say."""
    found = UNKNOWN
    for line in text.splitlines():
        if _TRTLLM_REFUSED in line:
            found = "trtllm (refused across nodes)"
            continue
        match = _INITIALIZED.search(line)
        if match is not None:
            backend = match.group("backend")
            found = backend if match.group("outcome") == "Initialized" else f"{backend} (failed)"
    return found
