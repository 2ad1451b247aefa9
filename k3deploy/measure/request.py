"""One streamed OpenAI request as smoke and bench send it: the endpoint's base URL from what the user typed
(`normalize_endpoint`), and the path and JSON body of a chat or completions stream for a profile (`request_body`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from k3deploy.errors import UsageError
from k3deploy.kobject import JsonObject
from k3deploy.profile.names import check_http_url
from k3deploy.redact import redact_url

if TYPE_CHECKING:
    from k3deploy.profile import Profile

#: Usage figures on every chunk: the per-request records count tokens from them (measure/record.py).
STREAM_OPTIONS = {"include_usage": True, "continuous_usage_stats": True}


def normalize_endpoint(url: str) -> str:
    """`http(s)://host[:port]` without a trailing slash or `/v1`; a URL without a scheme is a usage error."""
    # httpx loads only when an endpoint is used: `render`, `up`'s import and `--help` never pay for it.
    import httpx

    hint = "for example --endpoint http://10.0.0.5:8000"
    parsed: httpx.URL | None = None
    try:
        parsed = httpx.URL(url.strip())
        scheme_ok = parsed.scheme in ("http", "https") and bool(parsed.host)
    except httpx.InvalidURL:
        scheme_ok = True  # malformed past the scheme: check_http_url says how
    if not scheme_ok:
        raise UsageError(f"--endpoint {redact_url(url)!r} is not an http(s) URL", hint=hint)
    try:
        check_http_url(url.strip())  # also what httpx accepts but cannot connect to: port 99999, port 0
    except ValueError as exc:
        raise UsageError(f"--endpoint {exc}", hint=hint) from None
    if parsed is None:  # check_http_url passed what httpx refuses (a control character in the path)
        raise UsageError(f"--endpoint {redact_url(url)!r} is not a URL httpx can request", hint=hint)
    base = str(parsed.copy_with(query=None, fragment=None)).rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


#: What a correctness probe adds to a chat request: reasoning off, so the answer is in `content` at once. vLLM 0.32
#: takes `reasoning_effort` (entrypoints/openai/chat_completion/protocol.py: "none" sets enable_thinking false for
#: the chat template) and passes `chat_template_kwargs` on; Kimi K3's template reads `thinking`
#: (vllm/reasoning/kimi_k3_reasoning_parser.py). Templates that declare neither ignore them.
REASONING_OFF: JsonObject = {"reasoning_effort": "none", "chat_template_kwargs": {"thinking": False}}


def request_body(
    profile: Profile,
    prompt: str,
    max_tokens: int,
    *,
    ignore_eos: bool,
    reasoning_off: bool = False,
    temperature: float | None = None,
    top_p: float | None = None,
) -> tuple[str, JsonObject]:
    """Path and JSON body of one streamed request (chat or completions, per the profile); `reasoning_off` for the
    correctness probes (chat only: a completion has no reasoning channel). `temperature` defaults to
    smoke.temperature; `top_p` is sent only when given (the server's default otherwise)."""
    body: JsonObject = {
        "model": profile.model.served_name,
        "max_tokens": max_tokens,
        "temperature": profile.smoke.temperature if temperature is None else temperature,
        "stream": True,
        "stream_options": STREAM_OPTIONS,
        "ignore_eos": ignore_eos,
    }
    if top_p is not None:
        body["top_p"] = top_p
    if profile.smoke.api == "completions":
        return "/v1/completions", {**body, "prompt": prompt}
    if reasoning_off:
        body.update(REASONING_OFF)
    return "/v1/chat/completions", {**body, "messages": [{"role": "user", "content": prompt}]}
