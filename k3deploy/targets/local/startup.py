"""Reading vLLM's start-up log: how far it got (for progress) and why it stopped (for the error line).

Pure: log lines in, short strings out.
"""

from __future__ import annotations

import re

#: Log lines that mark how far start-up got, in order; the last one seen is the current phase.
PHASES = (
    ("reading the model config", re.compile(r"non-default args|Resolved architecture")),
    ("starting the engine", re.compile(r"Initializing a V1 LLM engine")),
    ("loading model", re.compile(r"Starting to load model|Loading weights")),
    ("profiling memory", re.compile(r"KV cache|num_gpu_blocks|Memory profiling", re.I)),
    ("starting API", re.compile(r"Starting vLLM API server|Available routes|Uvicorn running|Started server process")),
)
FIRST_PHASE = "importing vLLM"
#: pydantic puts the reason on a line of its own ("Value error, ..."); a traceback ends in "SomeError: reason".
_VALUE_ERROR = re.compile(r"Value error, (.+)")
_EXCEPTION = re.compile(r"\b([\w.]*(?:Error|Exception): .+)")


def phase(lines: list[str]) -> str:
    """The furthest start-up phase the log lines show."""
    text = "\n".join(lines)
    current = FIRST_PHASE
    for name, pattern in PHASES:
        if pattern.search(text):
            current = name
    return current


def failure_line(lines: list[str]) -> str:
    """The most telling line of a failed start: a validation message, else the last exception, else the last line."""
    for pattern in (_VALUE_ERROR, _EXCEPTION):
        for line in reversed(lines):
            match = pattern.search(line)
            if match:
                return match.group(1).strip()
    return lines[-1].strip() if lines else "(the log is empty)"
