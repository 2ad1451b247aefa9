"""The agreement test's splitter (tests/integration/stream_tee.py) on a slow upstream of its own: no vLLM needed.

A pair's answer that streams for longer than the pairing wait still reaches both clients whole. The splitter once
bounded the whole pair by that wait: on a loaded host a 384-token answer took more than 10 s, the waiting side was
answered 504 in the middle of its stream, and its client read `Not enough data to satisfy transfer length header`.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.integration import stream_tee

CHUNKS = [b"data: one\n\n", b"data: two\n\n", b"data: [DONE]\n\n"]
CHUNK_GAP_S = 0.2
BODY = json.dumps({"prompt": "p", "max_tokens": 3}).encode()


async def _slow_upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One chunked answer, a chunk every CHUNK_GAP_S, then the connection closed (the request asked for it)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(
        next(v for k, _, v in (h.partition(b":") for h in head.split(b"\r\n")) if k.lower() == b"content-length")
    )
    await reader.readexactly(length)
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
    for chunk in CHUNKS:
        await asyncio.sleep(CHUNK_GAP_S)
        writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    writer.close()


async def _ask(port: int, target: str, body: bytes = BODY) -> bytes:
    """Everything the splitter sends back for one request, to the connection's end."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"POST {target} HTTP/1.1\r\nhost: x\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(-1), 30)
    writer.close()
    return data


async def _serve_pair(reference_first: bool) -> tuple[bytes, bytes]:
    """(bench's answer, the reference client's) for one pair, the second request 0.05 s after the first."""
    upstream = await asyncio.start_server(_slow_upstream, "127.0.0.1", 0)
    tee = stream_tee.Tee(f"http://127.0.0.1:{upstream.sockets[0].getsockname()[1]}")
    server = await asyncio.start_server(tee.client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with upstream, server:
        assert b"armed" in await _ask(port, stream_tee.ARM, b"")

        async def later(target: str) -> bytes:
            await asyncio.sleep(0.05)
            return await _ask(port, target)

        bench, reference = "/v1/completions", f"{stream_tee.REFERENCE}/v1/completions"
        if reference_first:
            theirs, ours = await asyncio.gather(_ask(port, reference), later(bench))
        else:
            ours, theirs = await asyncio.gather(_ask(port, bench), later(reference))
    return ours, theirs


@pytest.mark.parametrize("reference_first", [False, True], ids=["bench-first", "reference-first"])
def test_an_answer_longer_than_the_pairing_wait_reaches_both_clients_whole(
    monkeypatch: pytest.MonkeyPatch, reference_first: bool
) -> None:
    # The answer streams for 3 x CHUNK_GAP_S = 0.6 s, six times the pairing wait; the partner comes well within it.
    monkeypatch.setattr(stream_tee, "PAIR_WAIT_S", 0.1)
    ours, theirs = asyncio.run(_serve_pair(reference_first))
    assert ours == theirs
    assert ours.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close\r\n" in ours
    assert ours.endswith(b"0\r\n\r\n") and all(chunk in ours for chunk in CHUNKS)


def test_a_partner_that_never_comes_is_answered_504_after_the_pairing_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_tee, "PAIR_WAIT_S", 0.1)

    async def alone() -> bytes:
        upstream = await asyncio.start_server(_slow_upstream, "127.0.0.1", 0)
        tee = stream_tee.Tee(f"http://127.0.0.1:{upstream.sockets[0].getsockname()[1]}")
        server = await asyncio.start_server(tee.client, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with upstream, server:
            await _ask(port, stream_tee.ARM, b"")
            return await _ask(port, "/v1/completions")

    assert asyncio.run(alone()).startswith(b"HTTP/1.1 504 ")
