"""The shapes of the registry's and the Hub's JSON answers, read through pydantic models. Pure.

Only the fields k3deploy reads are declared; every other field is ignored (registries add their own, and the
OCI image-spec lets a manifest carry annotations, subjects, artifact types). A field of the wrong type (`manifests`
a dict or a string, `platform` a string, `os: ["linux"]`) is a `MalformedAnswer` naming the answer and the field,
never an AttributeError or TypeError deep in the code that reads it: preflight's image check turns it into a WARN
of that one check, `pin` into exit 3. Strict: JSON `"5"` is not the size 5, nor 5 the string "5".

The shapes are the OCI image-spec's (image-index.md, manifest.md, config.md, descriptor.md), Docker's manifest
list and schema2 (distribution `manifest/manifestlist`, `manifest/schema2`), distribution's error body
(registry/api/errcode) and token answer (docs/content/spec/auth/token.md), and the Hub's
`/api/models/{repo}/revision/{rev}` (huggingface_hub `hf_api.py`, ModelInfo's `sha`).

A digest goes into a URL (`/manifests/<digest>`, `/blobs/<digest>`) only through `checked_digest`: a registry's
`../../../../token?x=` is refused, never followed as a path.
"""

from __future__ import annotations

import re
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from k3deploy.errors import MalformedAnswer

#: The one digest k3deploy requests by: sha256 in lower-case hex (what distribution computes and docker pins).
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True, populate_by_name=True)


class AnswerPlatform(_Answer):
    """An index entry's `platform`, or the `os`/`architecture`/`variant` of an image config."""

    os: str | None = None
    architecture: str | None = None
    variant: str | None = None


class Descriptor(_Answer):
    """A content descriptor: an index entry or a manifest's `config` (descriptor.md)."""

    media_type: str | None = Field(default=None, alias="mediaType")
    digest: str | None = None
    size: int | None = Field(default=None, ge=0)
    platform: AnswerPlatform | None = None


class Manifest(_Answer):
    """An image index / manifest list (`manifests`) or an image manifest (`config`); which it is, the media type says."""

    media_type: str | None = Field(default=None, alias="mediaType")
    manifests: list[Descriptor] | None = None
    config: Descriptor | None = None
    layers: list[Descriptor] | None = None


class ImageConfig(AnswerPlatform):
    """An image config blob: the platform it is built for (config.md); the rest is ignored."""


class TokenAnswer(_Answer):
    """A token server's answer: `token`, or OAuth2's `access_token` (token.md)."""

    token: str | None = None
    access_token: str | None = None


class RegistryErrorEntry(_Answer):
    """One entry of distribution's error body."""

    code: str | None = None
    message: str | None = None


class ErrorBody(_Answer):
    """distribution's error body `{"errors": [{"code", "message", "detail"}]}`."""

    errors: list[RegistryErrorEntry]


class HubRevisionAnswer(_Answer):
    """The Hub's answer for one revision of a model: the commit it resolves to."""

    sha: str


AnswerT = TypeVar("AnswerT", bound=_Answer)


def parse_answer(model: type[AnswerT], data: object, what: str) -> AnswerT:
    """`data` (parsed JSON) read as `model`; MalformedAnswer naming `what` and the first wrong field when it is not."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "the answer"
        got = type(first.get("input")).__name__
        more = exc.error_count() - 1
        raise MalformedAnswer(
            f"{what} is malformed: {field}: {first['msg']} (got {got})" + (f"; and {more} more" if more else ""),
            hint="the server, or a proxy in front of it, answered JSON of another shape; check the path to it",
        ) from None


def checked_digest(value: str | None, what: str) -> str:
    """`value` when it is `sha256:` and 64 lower-case hex digits, the only form put into a request's path."""
    if isinstance(value, str) and DIGEST.match(value):
        return value
    shown = repr(value[:80]) if isinstance(value, str) else "none"
    raise MalformedAnswer(
        f"{what} names digest {shown}, not sha256:<64 hex digits>",
        hint="the registry or a proxy in front of it answered a malformed manifest; rebuild or re-push the image, "
        "or pin from a direct connection",
    )
