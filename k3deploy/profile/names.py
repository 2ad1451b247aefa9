"""Kubernetes' own grammars for the names and values a profile puts into object names, files and fields.

Pure. Each grammar is a reusable annotated type (`DNSLabel`, `DNSSubdomain`, `LabelKey`, `LabelValue`,
`Quantity`, `PinnedImage`, ...) whose validator raises ValueError, so pydantic reports the dotted field path.
Patterns are matched with `re.fullmatch` and ASCII classes only, as Go's RE2 does (`$` in Python would also
accept a trailing newline, and `\\d` / `\\w` would accept non-ASCII digits and letters).

Sources, imitated exactly:
- kubernetes/apimachinery pkg/util/validation/validation.go (IsDNS1123Label, IsDNS1123Subdomain,
  IsRelaxedEnvVarName) and
  pkg/api/validate/content/kube.go (IsLabelKey, IsLabelValue).
- kubernetes/apimachinery pkg/api/resource/quantity.go (the serialization grammar and ParseQuantity) and
  suffix.go (the suffixes: n u m "" k M G T P E, Ki..Ei, and e/E with a 64-bit integer exponent).
- kubernetes/kubernetes pkg/apis/core/validation/validation.go: Secret/ConfigMap keys (IsConfigMapKey),
  non-negative resource requests, a positive PVC storage request.
- distribution/reference regexp.go and reference.go (image references; names up to 255 characters).
"""

from __future__ import annotations

import ipaddress
import re
from decimal import ROUND_CEILING, Decimal
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator

from k3deploy.redact import redact_text, redact_url, url_error

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_MAX = 63
CONFIG_KEY_MAX = 253
IMAGE_NAME_MAX = 255

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + r"(\." + _LABEL + r")*"
_LABEL_KEY_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_CONFIG_KEY = r"[-._a-zA-Z0-9]+"
# quantity.go: <signedNumber><suffix>, a number needing at least one digit. ParseQuantity also takes the
# digit-less forms "-", "+" and "." as zero; those are refused here (no real request is written that way).
_QUANTITY = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_INT64_MAX = 2**63 - 1

# distribution/reference regexp.go, with Go's ASCII \w.
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = _ALNUM + r"(?:" + _SEPARATOR + _ALNUM + r")*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = r"(?:" + _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?"
_NAME = r"(?:" + _DOMAIN + r"/)?" + _PATH_COMPONENT + r"(?:/" + _PATH_COMPONENT + r")*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"
_REFERENCE = re.compile(r"(" + _NAME + r")(?::(" + _TAG + r"))?(?:@(" + _DIGEST + r"))?", re.ASCII)


def _match(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value, re.ASCII) is not None


def check_dns_label(value: str) -> str:
    """IsDNS1123Label: lower-case alphanumerics and '-', alphanumeric at both ends, at most 63 characters."""
    if len(value) > DNS1123_LABEL_MAX or not _match(_LABEL, value):
        raise ValueError(
            f"{value!r} is not a DNS-1123 label (lower-case letters, digits and '-', "
            f"starting and ending alphanumeric, at most {DNS1123_LABEL_MAX} characters)"
        )
    return value


def check_dns_subdomain(value: str) -> str:
    """IsDNS1123Subdomain: dot-separated DNS-1123 labels, at most 253 characters."""
    if len(value) > DNS1123_SUBDOMAIN_MAX or not _match(_SUBDOMAIN, value):
        raise ValueError(
            f"{value!r} is not a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
            f"starting and ending alphanumeric, at most {DNS1123_SUBDOMAIN_MAX} characters)"
        )
    return value


def check_label_key(value: str) -> str:
    """IsLabelKey: `[prefix/]name`, prefix a DNS-1123 subdomain, name at most 63 of [-A-Za-z0-9_.]."""
    prefix, slash, name = value.rpartition("/")
    bad_prefix = bool(slash) and (
        not prefix or "/" in prefix or len(prefix) > DNS1123_SUBDOMAIN_MAX or not _match(_SUBDOMAIN, prefix)
    )
    if bad_prefix or len(name) > LABEL_MAX or not _match(_LABEL_KEY_NAME, name):
        raise ValueError(
            f"{value!r} is not a label key ([DNS-1123 subdomain/]name; the name at most {LABEL_MAX} "
            "alphanumerics, '-', '_' or '.', starting and ending alphanumeric)"
        )
    return value


def check_label_value(value: str) -> str:
    """IsLabelValue: empty, or at most 63 of [-A-Za-z0-9_.] starting and ending alphanumeric."""
    if len(value) > LABEL_MAX or not (value == "" or _match(_LABEL_KEY_NAME, value)):
        raise ValueError(
            f"{value!r} is not a label value (at most {LABEL_MAX} alphanumerics, '-', '_' or '.', "
            "starting and ending alphanumeric)"
        )
    return value


def check_config_key(value: str) -> str:
    """IsConfigMapKey (Secret and ConfigMap data keys): [-._a-zA-Z0-9]+, not '.' or '..', no leading '..'."""
    if len(value) > CONFIG_KEY_MAX or not _match(_CONFIG_KEY, value) or value in (".", "..") or value.startswith(".."):
        raise ValueError(
            f"{value!r} is not a Secret key (letters, digits, '-', '_' and '.', not starting with '..', "
            f"at most {CONFIG_KEY_MAX} characters)"
        )
    return value


def check_env_name(value: str) -> str:
    """IsRelaxedEnvVarName: non-empty, printable ASCII (space included) except '='."""
    if not value or any(not " " <= ch <= "~" or ch == "=" for ch in value):
        raise ValueError(f"{value!r} is not an environment variable name (printable ASCII characters except '=')")
    return value


def quantity_value(value: str) -> Decimal:
    """The number a Kubernetes quantity stands for (`64Gi` -> 68719476736); ValueError when not one."""
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise ValueError(
            f"{value!r} is not a Kubernetes quantity (a number with an optional suffix: "
            "Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or an exponent like e3; e.g. 64Gi, 500m, 32)"
        )
    sign, number, suffix = match.groups()
    suffix = suffix or ""
    if suffix[:1] in ("e", "E") and suffix[1:2] not in ("", "i"):
        exponent = int(suffix[1:])
        if abs(exponent) > _INT64_MAX:  # suffix.go parses the exponent with strconv.ParseInt(..., 64)
            raise ValueError(f"{value!r}: exponent out of range")
        # Only zero/non-zero and the sign matter to the callers; keep the Decimal small.
        scale = Decimal(10) ** max(min(exponent, 400), -400)
    elif suffix.endswith("i"):
        scale = Decimal(2) ** (10 * ("KMGTPE".index(suffix[0]) + 1))
    else:
        scale = (
            Decimal(10) ** {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}[suffix]
        )
    magnitude = Decimal(number if not number.endswith(".") else number[:-1] or "0") * scale
    return -magnitude if sign == "-" else magnitude


def quantity_bytes(value: str) -> int:
    """A non-negative quantity as a whole number, rounded up as Quantity.Value() rounds (`64Gi` -> 68719476736,
    `1.5T` -> 1500000000000, `500m` -> 1); ValueError when it is no quantity or is negative.

    The one quantity parser of k3deploy (the profile's validators and preflight's sizes both read through
    `quantity_value`). Not kubernetes.utils.parse_quantity: it takes what quantity.go refuses (`1K`, `Infinity`,
    `NaN`, `1_000`, `1e3Gi`, surrounding spaces), and importing it loads the whole Kubernetes client.
    """
    number = quantity_value(value)
    if number < 0:
        raise ValueError(f"{value!r} is negative; a size must be at least 0")
    return int(number.to_integral_value(rounding=ROUND_CEILING))


def check_quantity(value: str) -> str:
    """A non-negative quantity (what core validation demands of resource requests and sizeLimit)."""
    if quantity_value(value) < 0:
        raise ValueError(f"{value!r} is negative; a resource quantity must be at least 0")
    return value


def check_positive_quantity(value: str) -> str:
    """A quantity above zero (a PersistentVolumeClaim's storage request)."""
    if quantity_value(value) <= 0:
        raise ValueError(f"{value!r} must be above 0")
    return value


def check_pinned_image(value: str) -> str:
    """An image reference by distribution/reference's grammar that names a tag or a digest (never floats)."""
    match = _REFERENCE.fullmatch(value)
    if match is None or len(match.group(1)) > IMAGE_NAME_MAX:
        raise ValueError(f"image {value!r} is not a valid image reference (registry/repository[:tag][@digest])")
    _name, tag, digest = match.groups()
    if tag is None and digest is None:
        raise ValueError(
            f"image {value!r} has no tag or digest; pin it, e.g. 'repo/name:tag' or 'repo/name@sha256:...'"
        )
    if digest is not None and digest.startswith("sha256:") and len(digest) != len("sha256:") + 64:
        raise ValueError(f"image {value!r}: a sha256 digest has 64 hex digits")
    return value


def check_http_url(value: str) -> str:
    """An http(s) URL with a host, a port in 1..65535 when given, and a well-formed IPv6 literal when bracketed.

    Messages show the URL with its userinfo masked (redact.py): a password never reaches an error line."""
    shown = repr(redact_url(value))
    try:
        parts = urlsplit(value)
        port = parts.port  # ValueError when out of range or not a number
    except ValueError as exc:
        raise ValueError(f"{shown} is not a valid URL: {url_error(exc, value)}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{shown} is not an http(s) URL with a host")
    if port == 0:
        raise ValueError(f"{shown}: port 0 is not a port to connect to")
    if "[" in parts.netloc:
        try:
            ipaddress.IPv6Address(parts.hostname.split("%", 1)[0])
        except ValueError:
            raise ValueError(f"{shown}: {redact_text(parts.hostname, value)!r} is not an IPv6 address") from None
    if any(ch.isspace() or ord(ch) < 32 for ch in value):
        raise ValueError(f"{shown} contains whitespace or control characters")
    return value


def check_profile_url(value: str) -> str:
    """An http(s) URL as `check_http_url` takes it, without userinfo: a profile is written out by `pin` and carried
    into the rendered profile ConfigMap, so it never holds a credential (the environment, a Docker config or a
    Secret does)."""
    check_http_url(value)
    if "@" in urlsplit(value).netloc:
        raise ValueError(
            f"{redact_url(value)!r} carries credentials (user:password@), which a profile never holds: pin writes the "
            "profile out and render carries it into a ConfigMap; give them through the environment "
            "(K3DEPLOY_REGISTRY_URL) or a Docker config, and the nodes' through kubernetes.image_pull_secrets"
        )
    return value


def check_cidr(value: str) -> str:
    """An IPv4 or IPv6 network in CIDR notation with no host bits set, as a NetworkPolicy ipBlock takes it
    (k8s.io/kubernetes pkg/apis/networking/validation ValidateIPBlock; the API server warns on host bits, refused here)."""
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not a CIDR such as 10.0.0.0/16 ({exc})") from None
    if str(network) != value:
        raise ValueError(f"{value!r} is not in canonical form: write {network}")
    return value


def _number_as_text(value: object) -> object:
    """YAML reads `cpu_request: 32` as an int; Kubernetes takes a number for a quantity too (int-or-string)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return value


DNSLabel = Annotated[str, AfterValidator(check_dns_label)]
"""A DNS-1123 label (namespaces, most object names)."""
DNSSubdomain = Annotated[str, AfterValidator(check_dns_subdomain)]
"""A DNS-1123 subdomain (ServiceAccount, Secret, StorageClass, RuntimeClass names)."""
LabelKey = Annotated[str, AfterValidator(check_label_key)]
"""A label key (also a topologyKey)."""
LabelValue = Annotated[str, AfterValidator(check_label_value)]
"""A label value (node-selector values)."""
ConfigKey = Annotated[str, AfterValidator(check_config_key)]
"""A Secret or ConfigMap data key."""
EnvName = Annotated[str, AfterValidator(check_env_name)]
"""An environment variable name, as a container's env accepts it."""
Quantity = Annotated[str, BeforeValidator(_number_as_text), AfterValidator(check_quantity)]
"""A non-negative resource quantity (`32`, `512Gi`, `500m`)."""
PositiveQuantity = Annotated[str, BeforeValidator(_number_as_text), AfterValidator(check_positive_quantity)]
"""A resource quantity above zero (a PVC's storage size)."""
PinnedImage = Annotated[str, AfterValidator(check_pinned_image)]
"""A container image reference with a tag or a digest."""
HttpUrl = Annotated[str, AfterValidator(check_http_url)]
"""An http(s) URL that can be connected to (valid port and IPv6 literal)."""
ProfileUrl = Annotated[str, AfterValidator(check_profile_url)]
"""An http(s) URL a profile holds: as HttpUrl, and without credentials."""
Cidr = Annotated[str, AfterValidator(check_cidr)]
"""An IP network in CIDR notation (a NetworkPolicy ipBlock)."""
