"""SSE from raw socket reads: however a stream is cut into reads, the events are those of its lines.

The client keeps reads as they came and decodes them after the stream; a read holding only whole `data:` events
takes a short road (`_whole_data_events`). Both roads must give exactly the events, stamps and malformed lines
that reading the same stream line by line gives.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from k3deploy.errors import ChunkFormatError
from k3deploy.measure.sse import chunk_fields, scan_events
from tests.measure.sse_events import DecodedStream, SSEEvent, decode_events, parse_chunk

CHUNK = b'data: {"choices":[{"index":0,"text":"tok ","finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":%d}}\n\n'
#: Pieces a stream may hold: vLLM's own events, and everything SSE allows or a mangled stream brings.
PIECES = [
    CHUNK % 1,
    CHUNK % 2,
    b"data: [DONE]\n\n",
    b": keep-alive\n\n",
    b"event: x\ndata: a\ndata:b\r\n\r\n",
    b"garbage\n",
    b"hello: world\n\n",
    b'data: {"error": {"message": "boom"}}\n\n',
    b"\n",
    b"id: 7\nretry: 1\n\n",
    b"data: tail-without-newline",
]


def _by_lines(stream: bytes, cuts: list[int]) -> DecodedStream:
    """The reference: the stream split into lines, each stamped with the read that completed it."""
    bounds = [*sorted({c for c in cuts if 0 < c < len(stream)}), len(stream)]
    lines, start, line = [], 0, b""
    for read_no, end in enumerate(bounds):
        for byte in stream[start:end]:
            if byte == 10:
                lines.append((float(read_no), line.decode()))
                line = b""
            else:
                line += bytes([byte])
        start = end
    if line:
        lines.append((float(len(bounds) - 1), line.decode()))
    return decode_events(lines)


def _by_reads(stream: bytes, cuts: list[int]) -> DecodedStream:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(stream)}), len(stream)]
    reads = [(float(i), stream[a:b]) for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    out = DecodedStream()
    for stamp, payloads, event in scan_events(reads, out.malformed):
        out.events += [SSEEvent(p.decode(), stamp, None if event is None else event.decode()) for p in payloads]
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12), st.lists(st.integers(min_value=0, max_value=2000), max_size=8))
def test_any_cut_into_reads_gives_the_events_of_the_lines(pieces: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(pieces)
    assert _by_reads(stream, cuts) == _by_lines(stream, cuts)


def test_a_read_of_whole_data_events_is_one_batch_with_its_stamp() -> None:
    reads = [(1.0, CHUNK % 1 + CHUNK % 2), (2.0, b"data: [DONE]\n\n")]
    assert [(t, len(p)) for t, p, _ in scan_events(reads, [])] == [(1.0, 2), (2.0, 1)]
    # A read that ends inside an event: the event belongs to the read that completes it.
    half = (CHUNK % 1)[:20]
    got = list(scan_events([(1.0, half), (2.0, (CHUNK % 1)[20:] + CHUNK % 2)], []))
    assert [t for t, payloads, _ in got for _ in payloads] == [2.0, 2.0]


def test_chunk_fields_fast_and_strict_roads_agree() -> None:
    fast = chunk_fields(
        b'{"id":"x","choices":[{"index":0,"delta":{"reasoning_content":"a","content":"b"},"finish_reason":"stop"}],'
        b'"usage":{"prompt_tokens":4,"completion_tokens":9},"extra":[1,{"deep":null}]}'
    )
    assert fast == (False, None, True, "ab", "stop", 9, 4, "b")
    # What msgspec refuses is said precisely by the json road.
    with pytest.raises(ChunkFormatError, match="token count True is not an integer"):
        parse_chunk(b'{"choices": [], "usage": {"completion_tokens": true}}')
    with pytest.raises(ChunkFormatError, match="a delta is not an object"):
        parse_chunk(b'{"choices": [{"delta": "x"}]}')
    with pytest.raises(ChunkFormatError, match="a choice's text is not a string"):
        parse_chunk(b'{"choices": [{"text": 5}]}')
    assert parse_chunk(b'{"error": {"message": "boom"}}').error == "boom"
