"""Server-sent events and OpenAI stream chunks: pure parsing, no I/O.

`decode_events` groups raw lines into events the way the SSE spec does (fields, comments, blank-line
dispatch); `parse_chunk` reads one `data:` payload of an OpenAI-compatible completions or chat stream.
Anything that is not SSE, or a payload that is not the JSON a stream chunk must be, is reported, not guessed at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

DONE = "[DONE]"
_KNOWN_FIELDS = frozenset({"data", "event", "id", "retry"})


class ChunkFormatError(ValueError):
    """A `data:` payload that is not a stream chunk."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: its data (lines joined by newline), the stamp of its last data line."""

    data: str
    stamp: float
    event: str | None = None


@dataclass(slots=True)
class DecodedStream:
    """Events of a stream plus the lines that were not SSE."""

    events: list[SSEEvent] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)


def decode_events(lines: Iterable[tuple[float, str]]) -> DecodedStream:
    """Group stamped lines into events; an event ends at a blank line (or at the end of the stream).

    A line with no colon that is not blank, or a field name SSE does not define, is malformed (the spec would
    ignore it; a vLLM server never sends one, so it means something between us and the server mangled the stream).
    """
    out = DecodedStream()
    data: list[str] = []
    event: str | None = None
    stamp = 0.0
    for t, raw in lines:
        line = raw.rstrip("\r\n")
        if line == "":
            if data:
                out.events.append(SSEEvent("\n".join(data), stamp, event))
            data, event = [], None
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive
        name, sep, value = line.partition(":")
        if not sep or name not in _KNOWN_FIELDS:
            out.malformed.append(line)
            continue
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
            stamp = t
        elif name == "event":
            event = value
    if data:
        out.events.append(SSEEvent("\n".join(data), stamp, event))
    return out


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """What one chunk of a completions / chat stream says."""

    done: bool = False
    has_choices: bool = False
    text: str = ""
    finish_reason: str | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    error: str | None = None


def _choice_text(choice: dict) -> str:
    if "text" in choice:  # /v1/completions
        return choice.get("text") or ""
    delta = choice.get("delta") or {}
    # Reasoning deltas are output tokens too (a reasoning model thinks before it answers).
    return "".join(delta.get(key) or "" for key in ("reasoning_content", "reasoning", "content"))


def parse_chunk(data: str) -> StreamChunk:
    """Parse one `data:` payload; `[DONE]` ends the stream, `{"error": ...}` is a server-side failure."""
    if data.strip() == DONE:
        return StreamChunk(done=True)
    try:
        obj = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ChunkFormatError(f"not JSON ({exc.msg} at column {exc.colno}): {data[:80]!r}") from None
    if not isinstance(obj, dict):
        raise ChunkFormatError(f"not a JSON object: {data[:80]!r}")
    if "error" in obj and "choices" not in obj:
        err = obj["error"]
        message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
        return StreamChunk(error=message)
    choices = obj.get("choices")
    if not isinstance(choices, list):
        raise ChunkFormatError(f"no 'choices' list: {data[:80]!r}")
    usage = obj.get("usage") or {}
    if not isinstance(usage, dict):
        raise ChunkFormatError(f"'usage' is not an object: {data[:80]!r}")
    text, finish = "", None
    for choice in choices:
        if not isinstance(choice, dict):
            raise ChunkFormatError(f"a choice is not an object: {data[:80]!r}")
        text += _choice_text(choice)
        finish = choice.get("finish_reason") or finish
    return StreamChunk(
        has_choices=bool(choices),
        text=text,
        finish_reason=finish,
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
    )


def _int_or_none(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChunkFormatError(f"token count {value!r} is not an integer")
    return value
