"""From one request's raw stamped stream to its record: TTFT, decode tok/s, TPOT, tokens per chunk. Pure.

Token counts come from the server's cumulative `usage.completion_tokens` (continuous_usage_stats), so a chunk
holding a whole speculative verify step counts every token in it. Without per-chunk usage the final usage still
gives the total, and chunks are recognised by their text; the per-chunk figures are then left empty.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from k3deploy.errors import ChunkFormatError
from k3deploy.measure.per_request import read_spec_decode
from k3deploy.measure.sse import chunk_fields, scan_events
from k3deploy.report.smoke import RequestRecord, RequestSpecDecode, Tier

#: Characters of a kept answer (correctness probes): a right answer is a few hundred; the rest is not judged.
MAX_TEXT_CHARS = 32 * 1024
#: Characters of a message quoted from the server (an error event, a malformed line) in a record's error.
MAX_QUOTE_CHARS = 300


@dataclass(slots=True)
class RawStream:
    """What the client saw: when it sent, what arrived and when, when it stopped, and why if it failed.

    The client keeps each socket read as it came, `(stamp, bytes)` in `reads`, stamped by `time.perf_counter`;
    `reads_shift` turns those stamps into the run's clock (the one of `t_send`). Decoding waits until the stream has
    ended, off the hot path. `lines` (stamped text lines, on the run's clock) is the same stream already split, as
    tests and transcripts give it; a stream has one or the other.
    """

    t_send: float
    t_end: float = 0.0
    lines: list[tuple[float, str]] = field(default_factory=list)
    error: str | None = None
    reads: list[tuple[float, bytes]] = field(default_factory=list)
    reads_shift: float = 0.0

    def stamped_reads(self) -> tuple[list[tuple[float, bytes]], float]:
        """The stream as reads, and the shift from their stamps to the run's clock."""
        if self.lines:
            return [(t, line.encode("utf-8") + b"\n") for t, line in self.lines], 0.0
        return self.reads, self.reads_shift


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """What a request asked for, so its record can be judged against it."""

    index: int
    phase: str
    prompt_id: str
    max_tokens: int
    tier: Tier | None = None
    concurrency: int = 1
    expect_full: bool = True
    keep_text: bool = False


def build_record(raw: RawStream, spec: RequestSpec) -> RequestRecord:
    """Turn a raw stream into a record; any way the stream went wrong ends up in `error` with `ok=False`."""
    reads, shift = raw.stamped_reads()
    origin = raw.t_send - shift  # an event's offset from the send is its stamp minus this
    problems: list[str] = []
    malformed: list[str] = []
    server_errors: list[str] = []
    offsets: list[float] = []
    deltas: list[int | None] = []
    answers: list[str] = []
    seen_tokens = 0
    total: int | None = None
    prompt_tokens: int | None = None
    finish: str | None = None
    own_spec: RequestSpecDecode | None = None
    done = False
    # The client's per-token cost is this loop: locals only, one tuple per chunk, no object per event.
    for stamp, payloads, _event in scan_events(reads, malformed):
        offset = stamp - origin
        for data in payloads:
            try:
                is_done, error, has_choices, text, chunk_finish, completion, prompt, answer = chunk_fields(data)
            except ChunkFormatError as exc:
                malformed.append(str(exc))
                continue
            if is_done:
                done = True
                continue
            if error is not None:
                server_errors.append(error)
                continue
            if prompt is not None:
                prompt_tokens = prompt
            if chunk_finish:
                finish = chunk_finish
            if completion is None:
                if has_choices:
                    answers.append(answer)
                    if text:
                        offsets.append(offset)
                        deltas.append(None)
                continue
            total = completion
            if not has_choices:  # the final usage chunk: where vLLM puts the request's own spec-decode counts
                try:
                    own_spec = read_spec_decode(data) or own_spec
                except ChunkFormatError as exc:
                    malformed.append(str(exc))
                continue
            answers.append(answer)
            delta = completion - seen_tokens
            seen_tokens = completion
            if delta > 0:
                offsets.append(offset)
                deltas.append(delta)

    if server_errors:
        more = f" ({len(server_errors)} error events, first shown)" if len(server_errors) > 1 else ""
        problems.append(f"server error in stream{more}: {server_errors[0][:MAX_QUOTE_CHARS]}")
    if raw.error:
        problems.insert(0, raw.error)
    if malformed:
        problems.append(f"{len(malformed)} malformed SSE line(s), first: {malformed[0][:120]}")
    if not raw.error and not done:
        problems.append(f"stream ended before [DONE] after {seen_tokens if total is None else total} token(s)")
    if total is None and not raw.error:
        problems.append("the server sent no usage; tokens cannot be counted without a client tokenizer")
    elif total is not None and spec.expect_full and done and total < spec.max_tokens:
        problems.append(f"stopped after {total} of {spec.max_tokens} tokens (finish_reason={finish})")

    per_chunk = bool(deltas) and all(d is not None for d in deltas)
    chunk_tokens = [int(d) for d in deltas if d is not None] if per_chunk else []
    record = RequestRecord(
        index=spec.index,
        phase=spec.phase,
        concurrency=spec.concurrency,
        prompt_id=spec.prompt_id,
        tier=spec.tier,
        ok=not problems,
        error="; ".join(problems) or None,
        max_tokens=spec.max_tokens,
        t_send=raw.t_send,
        t_first=raw.t_send + offsets[0] if offsets else None,
        t_last=raw.t_send + offsets[-1] if offsets else None,
        t_end=raw.t_end,
        prompt_tokens=prompt_tokens,
        completion_tokens=total,
        finish_reason=finish,
        per_chunk_usage=per_chunk,
        chunk_offsets_s=[round(o, 6) for o in offsets],
        chunk_tokens=chunk_tokens,
        malformed_lines=len(malformed),
        # The answer only (content): reasoning is not what a correctness probe judges.
        text="".join(answers)[:MAX_TEXT_CHARS] if spec.keep_text else None,
        spec_decode=own_spec,
    )
    return record.model_copy(update=_timings(record))


#: Fewer chunks than this say too little about how they arrived to call a stream bursty.
BURST_MIN_CHUNKS = 8
#: No server produces decode steps this close together; when most chunks arrive closer than this they were held
#: back and released together (a buffering proxy, an API server starved of CPU, or a client too slow to read).
BURST_GAP_S = 0.0005


def is_bursty(offsets: list[float]) -> bool:
    """True when most output chunks arrived back-to-back rather than one decode step at a time."""
    if len(offsets) < BURST_MIN_CHUNKS:
        return False
    gaps = sorted(b - a for a, b in itertools.pairwise(offsets))
    median = gaps[len(gaps) // 2] if len(gaps) % 2 else (gaps[len(gaps) // 2 - 1] + gaps[len(gaps) // 2]) / 2
    return median < BURST_GAP_S


def _timings(record: RequestRecord) -> dict[str, object]:
    """TTFT, decode rate and TPOT of a record; decode counts the tokens after the first output chunk."""
    out: dict[str, object] = {
        "ttft_s": None,
        "decode_tok_s": None,
        "tpot_ms": None,
        "tokens_per_chunk": None,
        "e2e_tok_s": None,
        "bursty": is_bursty(record.chunk_offsets_s),
    }
    if record.t_first is None or record.t_last is None or record.completion_tokens is None:
        return out
    if record.t_last > record.t_send:
        out["e2e_tok_s"] = record.completion_tokens / (record.t_last - record.t_send)
    out["ttft_s"] = record.t_first - record.t_send
    if record.chunk_tokens:
        out["tokens_per_chunk"] = sum(record.chunk_tokens) / len(record.chunk_tokens)
    first = record.chunk_tokens[0] if record.chunk_tokens else 1
    decode_tokens = record.completion_tokens - first
    span = record.t_last - record.t_first
    if decode_tokens > 0 and span > 0:
        out["decode_tok_s"] = decode_tokens / span
        out["tpot_ms"] = 1000.0 * span / decode_tokens
    return out
