"""One request, two readers: the agreement test's splitter between a real vLLM server and the two clients it compares.

After a POST to ARM, the next request from k3deploy bench (any path but /reference/) is paired with one from
`vllm bench serve`'s request function (under /reference/, the prefix dropped), both for the same prompt; bench's
other requests (liveness, warm-up) pass through alone. The splitter waits for both, sends bench's
upstream once, and writes every byte of the answer to both clients as it arrives: the two measure the very same
stream, so their TTFT and inter-token gaps differ only by what each client makes of it, not by which request the
engine prefilled first (two requests sent 20 ms apart differ by a whole engine step of TTFT; sent together, by a race).

Nothing is parsed past the head of each message: the answer's bytes (chunked or not) are relayed verbatim, with
`connection: close` so that both clients read it to its end and connect afresh for the next pair (the same cost
for both). A pair whose bodies name different prompts or lengths is refused with 400, one whose second request does
not come within PAIR_WAIT_S with 504; a pair's answer is bounded by ANSWER_WAIT_S alone.

    python -m tests.integration.stream_tee http://127.0.0.1:PORT     # prints {"port": N} when it listens
"""

from __future__ import annotations

import asyncio
import http.client
import json
import sys
from dataclasses import dataclass, field
from urllib.parse import urlsplit

REFERENCE = "/reference"
ARM = "/__tee/arm"
PAIR_WAIT_S = 10.0
# A whole answer's bound: the agreement test's longest request is a few seconds on a loaded host.
ANSWER_WAIT_S = 300.0
HEAD_LIMIT = 64 * 1024


@dataclass
class Request:
    """One client's request: its head's parts, its body, and the connection to answer on."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    writer: asyncio.StreamWriter
    paired: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    done: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Request | None:
    """The connection's request (None if it ends first): head up to the blank line, body by Content-Length."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:] if line)]
    length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
    body = await reader.readexactly(length) if length else b""
    return Request(method, target, headers, body, writer)


def answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """A short plain-text answer, then the connection closed."""
    text = reason.encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain\r\ncontent-length: {len(text)}\r\n"
        f"connection: close\r\n\r\n".encode()
        + text
    )
    writer.close()


def same_ask(ours: bytes, theirs: bytes) -> bool:
    """Both bodies ask for the same prompt and output length (the rest is each client's own spelling)."""
    a, b = json.loads(ours), json.loads(theirs)
    return a.get("prompt") == b.get("prompt") and a.get("max_tokens") == b.get("max_tokens")


class Tee:
    """Relays each request upstream; after ARM, bench's next request is paired with the reference client's and
    one answer goes to both. One pair at a time, as the test sends them."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.armed = False
        self.pairs = 0
        self.waiting: dict[bool, Request] = {}

    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection, one request: the answer ends it."""
        request = await read_request(reader, writer)
        if request is None:
            writer.close()
            return
        if request.target == ARM:
            self.armed = True
            answer(writer, 200, "armed")
            return
        reference = request.target.startswith(REFERENCE + "/")
        if not reference and not self.armed:
            # Bench's liveness probes and warm-up, unpaired.
            try:
                await asyncio.wait_for(self.relay(request, (writer,)), ANSWER_WAIT_S)
            finally:
                writer.close()
            return
        if reference:
            request.target = request.target[len(REFERENCE) :]
        else:
            self.armed = False
        if reference in self.waiting:
            answer(writer, 409, "a request of this side is already waiting")
            return
        self.waiting[reference] = request
        if (not reference) not in self.waiting:
            # Only the partner's arrival is bounded by PAIR_WAIT_S: once paired, this connection carries the answer
            # (the partner's handler writes it and closes it), however long a loaded host takes to stream it.
            try:
                await asyncio.wait_for(asyncio.shield(request.paired), PAIR_WAIT_S)
            except TimeoutError:
                if self.waiting.get(reference) is request:
                    del self.waiting[reference]
                    answer(writer, 504, "no partner request arrived")
                    return
            await request.done
            return
        ours, theirs = self.waiting.pop(False), self.waiting.pop(True)
        for r in (ours, theirs):
            if not r.paired.done():
                r.paired.set_result(None)
        try:
            if not same_ask(ours.body, theirs.body):
                for r in (ours, theirs):
                    answer(r.writer, 400, "the two requests ask for different prompts or lengths")
                return
            # Each client is written to first in every other pair: the first written may be the first woken.
            self.pairs += 1
            to = (ours.writer, theirs.writer) if self.pairs % 2 else (theirs.writer, ours.writer)
            await asyncio.wait_for(self.relay(ours, to), ANSWER_WAIT_S)
        finally:
            for r in (ours, theirs):
                r.writer.close()
                if not r.done.done():
                    r.done.set_result(None)

    async def relay(self, ask: Request, to: tuple[asyncio.StreamWriter, ...]) -> None:
        """Send `ask` upstream once; write its answer's head (with `connection: close`) and bytes to every `to`."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            headers = [(k, v) for k, v in ask.headers if k.lower() not in ("connection", "keep-alive")]
            head = f"{ask.method} {ask.target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
            writer.write((head + "connection: close\r\n\r\n").encode("latin-1") + ask.body)
            await writer.drain()
            status, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            kept = [line for line in lines if line and line.split(":", 1)[0].strip().lower() != "connection"]
            out = "\r\n".join([status, *kept, "connection: close", "", ""]).encode("latin-1")
            while out:
                for w in to:
                    w.write(out)
                await asyncio.gather(*(w.drain() for w in to))
                out = await reader.read(65536)
        finally:
            writer.close()


def arm(tee_url: str, timeout_s: float = 5.0) -> None:
    """Tell the splitter at `tee_url` to pair bench's next request (blocking: called from bench's on_send hook)."""
    parts = urlsplit(tee_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout_s)
    try:
        conn.request("POST", ARM)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"the splitter refused to arm: {response.status}")
    finally:
        conn.close()


async def serve(upstream: str) -> None:
    """Listen on a free loopback port, print it, relay pairs until killed."""
    tee = Tee(upstream)
    server = await asyncio.start_server(tee.client, "127.0.0.1", 0, limit=HEAD_LIMIT)
    print(json.dumps({"port": server.sockets[0].getsockname()[1]}), flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    """`python -m tests.integration.stream_tee UPSTREAM_URL`."""
    asyncio.run(serve(sys.argv[1]))


if __name__ == "__main__":
    main()
