"""The LeaderWorkerSet admission webhooks (mleaderworkerset.kb.io / vleaderworkerset.kb.io), as the LWS
controller manager serves them.

Imitates kubernetes-sigs/lws pkg/webhooks/leaderworkerset_webhook.go (v0.10): Default fills restartPolicy,
rolloutStrategy (maxUnavailable 1, maxSurge 0, partition 0) and networkConfig.subdomainPolicy; generalValidate
checks the name (DNS-1035, it names a headless Service), replicas, size, replicas*size, maxUnavailable/maxSurge
(non-negative int or percent, at most 100%, not both 0) and partition. A denial reaches the client as the API
server words a webhook rejection (k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go): 403
Forbidden, `admission webhook "vleaderworkerset.kb.io" denied the request: <errors>`, no causes.
SubGroupPolicy rules are not imitated (k3deploy renders no sub-groups).
"""

from __future__ import annotations

import math
import re

from tests.kubeapi.errors import ApiError, FieldError, GoValue, aggregate

VALIDATING = "vleaderworkerset.kb.io"
_MAX_INT32 = 2**31 - 1
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    "regex used for validation is '[0-9]+%')"
)
_RUC = "spec.rolloutStrategy.rollingUpdateConfiguration"


def default(lws: dict) -> None:
    """The mutating webhook, in place."""
    spec = lws.setdefault("spec", {})
    template = spec.setdefault("leaderWorkerTemplate", {})
    if not template.get("restartPolicy"):
        template["restartPolicy"] = "RecreateGroupOnPodRestart"
    if template["restartPolicy"] == "Default":
        template["restartPolicy"] = "None"
    strategy = spec.setdefault("rolloutStrategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate" and strategy.get("rollingUpdateConfiguration") is None:
        strategy["rollingUpdateConfiguration"] = {"maxUnavailable": 1, "maxSurge": 0, "partition": 0}
    network = spec.get("networkConfig")
    if network is None:
        spec["networkConfig"] = {"subdomainPolicy": "Shared"}
    elif network.get("subdomainPolicy") is None:
        network["subdomainPolicy"] = "Shared"


def _int_or_string(value: object) -> GoValue:
    if isinstance(value, str):
        return GoValue(f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:"{value}"}}')
    return GoValue(f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}')


def _int_or_percent(value: object, where: str) -> list[FieldError]:
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [FieldError("Invalid", where, _int_or_string(value), _PERCENT_MSG)]
        if int(value[:-1]) > 100:
            return [FieldError("Invalid", where, _int_or_string(value), "must not be greater than 100%")]
    elif isinstance(value, int) and value < 0:
        return [FieldError("Invalid", where, value, "must be greater than or equal to 0")]
    return []


def _scaled(value: object, total: int, round_up: bool) -> int | None:
    """intstr.GetScaledValueFromIntOrPercent; None when it is not an int or a percent."""
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _PERCENT.match(value):
        scaled = int(value[:-1]) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return None


def validate(lws: dict) -> list[FieldError]:
    """generalValidate, for create and update alike."""
    errors: list[FieldError] = []
    name = lws.get("metadata", {}).get("name", "")
    if not _DNS1035.match(name):
        errors.append(FieldError("Invalid", "metadata.name", name, _DNS1035_MSG))
    spec = lws.get("spec", {})
    replicas = spec.get("replicas", 1)
    size = spec.get("leaderWorkerTemplate", {}).get("size", 1)
    if replicas < 0:
        errors.append(FieldError("Invalid", "spec.replicas", replicas, "replicas must be equal or greater than 0"))
    if replicas > 1000000:
        errors.append(FieldError("Invalid", "spec.replicas", replicas, "replicas must be equal or less than 1000000"))
    if size < 1:
        errors.append(
            FieldError("Invalid", "spec.leaderWorkerTemplate.size", size, "size must be equal or greater than 1")
        )
    if replicas * size > _MAX_INT32:
        errors.append(
            FieldError(
                "Invalid",
                "spec.replicas",
                replicas,
                f"the product of replicas and worker replicas must not exceed {_MAX_INT32}",
            )
        )
    config = spec.get("rolloutStrategy", {}).get("rollingUpdateConfiguration") or {}
    unavailable, surge = config.get("maxUnavailable", 0), config.get("maxSurge", 0)
    errors += _int_or_percent(unavailable, f"{_RUC}.maxUnavailable")
    errors += _int_or_percent(surge, f"{_RUC}.maxSurge")
    if config.get("partition", 0) < 0:
        errors.append(
            FieldError("Invalid", f"{_RUC}.partition", config["partition"], "must be greater than or equal to 0")
        )
    unavailable_n, surge_n = _scaled(unavailable, replicas, False), _scaled(surge, replicas, True)
    if unavailable_n is None:
        errors.append(FieldError("Invalid", f"{_RUC}.maxUnavailable", _int_or_string(unavailable), "invalid value"))
    if surge_n is None:
        errors.append(FieldError("Invalid", f"{_RUC}.maxSurge", _int_or_string(surge), "invalid value"))
    if unavailable_n == 0 and surge_n == 0 and replicas != 0:
        errors.append(
            FieldError(
                "Invalid", f"{_RUC}.maxUnavailable", _int_or_string(unavailable), "must not be 0 when `maxSurge` is 0"
            )
        )
    return errors


def admit(lws: dict) -> None:
    """Run both webhooks on a LeaderWorkerSet about to be stored: default in place, then deny with 403."""
    default(lws)
    errors = validate(lws)
    if errors:
        raise ApiError(403, f'admission webhook "{VALIDATING}" denied the request: {aggregate(errors)}', "Forbidden")
