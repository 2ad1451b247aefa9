"""Whether a structured label selector selects a set of labels, for unit tests of rendered selectors (an
InferencePool's, a Deployment's, a Service's) against the labels their pods will carry.

Mirrors k8s.io/apimachinery pkg/apis/meta/v1/helpers.go `LabelSelectorAsSelector` with pkg/labels/selector.go
`Requirement.Matches`: matchLabels are ANDed equalities with the matchExpressions; `In` needs the key with one of the
values, `NotIn` matches a missing key, `Exists`/`DoesNotExist` test the key alone; a nil selector selects nothing
and an empty one everything. An unknown operator is an error there, and one here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def match_label_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` match a structured LabelSelector (matchLabels + matchExpressions); None matches nothing."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], set(expr.get("values") or [])
        if op == "In":
            matched = key in labels and labels[key] in values
        elif op == "NotIn":
            matched = key not in labels or labels[key] not in values
        elif op == "Exists":
            matched = key in labels
        elif op == "DoesNotExist":
            matched = key not in labels
        else:
            raise ValueError(f"{op!r} is not a valid label selector operator")
        if not matched:
            return False
    return True
