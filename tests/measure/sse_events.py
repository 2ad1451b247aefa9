"""Named views of measure/sse.py's readers for the tests: events as objects, a chunk as a StreamChunk.

The client reads a stream with `scan_events` and `chunk_fields` and builds no object per event (measure/sse.py); these
views build one, so a test can compare what was read with what was sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from k3deploy.measure.sse import StreamChunk, chunk_fields, scan_events


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: its data (lines joined by newline), the stamp of its last data line."""

    data: str
    stamp: float
    event: str | None = None


@dataclass
class DecodedStream:
    """Events of a stream plus the lines that were not SSE."""

    events: list[SSEEvent] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)


def decode_events(lines: Iterable[tuple[float, str]]) -> DecodedStream:
    """Group stamped text lines into events (as `scan_events` does for reads), one SSEEvent each."""
    out = DecodedStream()
    reads = [(t, line.encode("utf-8") + b"\n") for t, line in lines]
    for stamp, payloads, event in scan_events(reads, out.malformed):
        out.events += [
            SSEEvent(
                data.decode("utf-8", "replace"), stamp, None if event is None else event.decode("utf-8", "replace")
            )
            for data in payloads
        ]
    return out


def parse_chunk(data: str | bytes) -> StreamChunk:
    """One `data:` payload as a StreamChunk (`chunk_fields`, named)."""
    done, error, has_choices, text, finish, completion, prompt, answer = chunk_fields(
        data.encode("utf-8") if isinstance(data, str) else data
    )
    return StreamChunk(
        done=done,
        has_choices=has_choices,
        text=text,
        finish_reason=finish,
        completion_tokens=completion,
        prompt_tokens=prompt,
        error=error,
        answer=answer,
    )
