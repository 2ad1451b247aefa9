"""Just enough of the Kubernetes protobuf encoding to read what kubectl sends as protobuf: the runtime.Unknown
envelope and a SelfSubjectAccessReview (`kubectl auth can-i`). Other protobuf bodies get 415.
"""

from __future__ import annotations

from tests.kubeapi.errors import ApiError

MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def fields(data: bytes) -> dict[int, list[object]]:
    """{field number: [values]} of one message (varints as ints, length-delimited as bytes)."""
    out: dict[int, list[object]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos : pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _text(msg: dict[int, list[object]], number: int) -> str:
    return msg[number][0].decode() if number in msg else ""  # type: ignore[union-attr]


def decode(body: bytes) -> dict:
    """The JSON-shaped object of a protobuf body; 415 unless it is a SelfSubjectAccessReview."""
    if not body.startswith(MAGIC):
        raise ApiError(415, "the body of the request was not a Kubernetes protobuf message")
    unknown = fields(body[len(MAGIC) :])
    type_meta = fields(unknown[1][0]) if 1 in unknown else {}  # type: ignore[arg-type]
    api_version, kind = _text(type_meta, 1), _text(type_meta, 2)
    if kind != "SelfSubjectAccessReview":
        raise ApiError(
            415, f"the test API server reads protobuf only for SelfSubjectAccessReview, not {kind!r}; send JSON"
        )
    review = fields(unknown[2][0])  # type: ignore[arg-type]
    spec = fields(review[2][0]) if 2 in review else {}  # type: ignore[arg-type]
    attrs = fields(spec[1][0]) if 1 in spec else {}  # type: ignore[arg-type]
    names = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
    return {
        "apiVersion": api_version,
        "kind": kind,
        "spec": {"resourceAttributes": {n: _text(attrs, i + 1) for i, n in enumerate(names)}},
    }
