"""Server-sent events and OpenAI stream chunks: pure parsing, no I/O.

`scan_events` groups the stamped reads of a stream (raw bytes, as they came off the socket) into events the way
the SSE spec does (fields, comments, blank-line dispatch). `chunk_fields` reads one `data:` payload of an
OpenAI-compatible completions or chat stream. Anything that is not SSE, or a payload that is not the JSON a stream
chunk must be, is reported, not guessed at.

This is the client's per-token cost, so the common case takes the shortest road: bytes are split by C methods,
a well-formed chunk is decoded by msgspec straight into the few fields smoke and bench read (everything else in
it is skipped unparsed), and no object is made per event. Whatever msgspec refuses is read again by the strict
`json` path, which says exactly what is wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import msgspec

from k3deploy.errors import ChunkFormatError
from k3deploy.kobject import JsonObject

DONE = "[DONE]"
_KNOWN_FIELDS = frozenset({"data", "event", "id", "retry"})


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _whole_data_events(buf: bytes) -> list[bytes] | None:
    """The payloads of `buf` when it is exactly `data: P\\n\\n` repeated (each P one line), else None.

    Every newline of such a buffer is accounted for by the separators, so counting them proves the shape.
    """
    if buf[:6] != b"data: " or buf[-2:] != b"\n\n" or b"\r" in buf:
        return None
    parts = buf[6:-2].split(b"\n\ndata: ")
    return parts if buf.count(b"\n") == 2 * len(parts) else None


class _Pending:
    """The event being read line by line: its data lines, its name, the stamp of its last data line."""

    __slots__ = ("data", "event", "stamp")

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.event: bytes | None = None
        self.stamp = 0.0

    def take(self) -> tuple[float, list[bytes], bytes | None]:
        out = (self.stamp, [b"\n".join(self.data)], self.event)
        self.data, self.event = [], None
        return out


def _line_events(
    lines: list[bytes], t: float, cur: _Pending, malformed: list[str]
) -> Iterator[tuple[float, list[bytes], bytes | None]]:
    for line in lines:
        if line[-1:] == b"\r":  # CRLF line ends
            line = line[:-1]
        if not line:
            if cur.data:
                yield cur.take()
            cur.event = None
            continue
        if line[:1] == b":":  # a comment / keep-alive
            continue
        name, sep, value = line.partition(b":")
        if not sep or _text(name) not in _KNOWN_FIELDS:
            malformed.append(_text(line))
            continue
        value = value[1:] if value[:1] == b" " else value
        if name == b"data":
            cur.data.append(value)
            cur.stamp = t
        elif name == b"event":
            cur.event = value


def scan_events(
    reads: Iterable[tuple[float, bytes]], malformed: list[str]
) -> Iterator[tuple[float, list[bytes], bytes | None]]:
    """Events of stamped reads, as (stamp, data payloads, event name); an event ends at a blank line or the end.

    An event's stamp is that of the read that completed its last data line. A read holding nothing but whole
    `data:` events (what vLLM sends) yields them all at once with its stamp; anything else is read line by line.
    A line with no colon that is not blank, or a field name SSE does not define, goes to `malformed` (the spec
    would ignore it; a vLLM server never sends one, so something between us and the server mangled the stream).
    """
    cur = _Pending()
    last, pending = 0.0, b""
    for t, chunk in reads:
        buf = pending + chunk if pending else chunk
        last = t
        if not cur.data and cur.event is None and (whole := _whole_data_events(buf)) is not None:
            pending = b""
            yield t, whole, None
            continue
        lines = buf.split(b"\n")
        pending = lines.pop()
        yield from _line_events(lines, t, cur, malformed)
    if pending:  # an unterminated last line still counts
        yield from _line_events([pending], last, cur, malformed)
    if cur.data:
        yield cur.take()


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
    #: The answer only: `content` (or a completion's `text`), without the reasoning deltas `text` also holds.
    answer: str = ""


def _choice_text(choice: JsonObject) -> tuple[str, str]:
    """(all output text, the answer only) of one choice."""
    if "text" in choice:  # /v1/completions
        text = answer = choice.get("text") or ""
    else:
        delta = choice.get("delta") or {}
        if not isinstance(delta, dict):
            raise ChunkFormatError(f"a delta is not an object: {delta!r:.80}")
        # Reasoning deltas are output tokens too (a reasoning model thinks before it answers); the answer is content.
        parts = [delta.get(key) or "" for key in ("reasoning_content", "reasoning", "content")]
        if not all(isinstance(part, str) for part in parts):
            raise ChunkFormatError(f"a delta's text is not a string: {delta!r:.80}")
        text, answer = "".join(parts), parts[2]
    if not isinstance(text, str):
        raise ChunkFormatError(f"a choice's text is not a string: {text!r:.80}")
    return text, answer


def _parse_strict(data: str) -> StreamChunk:
    """The json-module reading of a payload: slower, and says exactly what is wrong with one that is not a chunk."""
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
    text, answer, finish = "", "", None
    for choice in choices:
        if not isinstance(choice, dict):
            raise ChunkFormatError(f"a choice is not an object: {data[:80]!r}")
        choice_text, choice_answer = _choice_text(choice)
        text, answer = text + choice_text, answer + choice_answer
        finish = choice.get("finish_reason") or finish
    return StreamChunk(
        has_choices=bool(choices),
        text=text,
        answer=answer,
        finish_reason=finish if finish is None or isinstance(finish, str) else str(finish),
        completion_tokens=_int_or_none(usage.get("completion_tokens")),
        prompt_tokens=_int_or_none(usage.get("prompt_tokens")),
    )


def _int_or_none(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChunkFormatError(f"token count {value!r} is not an integer")
    return value


# The fields of a chunk smoke and bench read, as msgspec types: the rest of a chunk is skipped, not built.
# Field names after vLLM's protocol (vllm/entrypoints/openai/protocol.py: CompletionStreamResponse,
# ChatCompletionStreamResponse, DeltaMessage, UsageInfo).
class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None


class _Choice(msgspec.Struct):
    text: str | msgspec.UnsetType | None = msgspec.UNSET
    delta: _Delta | None = None
    finish_reason: str | None = None


class _Usage(msgspec.Struct):
    completion_tokens: int | None = None
    prompt_tokens: int | None = None


class _Wire(msgspec.Struct):
    choices: list[_Choice] | msgspec.UnsetType = msgspec.UNSET
    usage: _Usage | None = None


_decode_wire = msgspec.json.Decoder(_Wire).decode

#: What `chunk_fields` returns: (done, error, has_choices, text, finish_reason, completion_tokens, prompt_tokens,
#: answer). `text` is every output delta (reasoning too: what tells a chunk carries tokens), `answer` the content only
#: (what a correctness probe judges: a model that drafts its JSON while thinking has not answered with it).
ChunkFields = tuple[bool, "str | None", bool, str, "str | None", "int | None", "int | None", str]
_DONE: ChunkFields = (True, None, False, "", None, None, None, "")


def chunk_fields(data: bytes) -> ChunkFields:
    """Read one `data:` payload (see `ChunkFields`); `[DONE]` ends the stream, `{"error": ...}` is a server failure.

    Raises ChunkFormatError for a payload that is not a stream chunk.
    """
    if data == b"[DONE]":
        return _DONE
    try:
        wire = _decode_wire(data)
    except msgspec.MsgspecError:
        wire = None
    if wire is None or wire.choices is msgspec.UNSET:
        c = _parse_strict(_text(data))  # error events, and anything msgspec refused
        return (
            c.done,
            c.error,
            c.has_choices,
            c.text,
            c.finish_reason,
            c.completion_tokens,
            c.prompt_tokens,
            c.answer,
        )
    text, answer, finish = "", "", None
    for choice in wire.choices:
        if choice.text is not msgspec.UNSET:
            text += choice.text or ""
            answer += choice.text or ""
        elif (delta := choice.delta) is not None:
            text += (delta.reasoning_content or "") + (delta.reasoning or "") + (delta.content or "")
            answer += delta.content or ""
        finish = choice.finish_reason or finish
    usage = wire.usage
    if usage is None:
        return (False, None, bool(wire.choices), text, finish, None, None, answer)
    return (False, None, bool(wire.choices), text, finish, usage.completion_tokens, usage.prompt_tokens, answer)
