"""What `apply_object` calls an object when the server's answer is known: the decision alone, with a two-method
stand-in for the API server (the real server's answers are exercised on the plane, tests/realk8s/rollout)."""

from __future__ import annotations

import copy
from typing import Any

from k3deploy.targets.kubernetes.apply import apply_object

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "smoke", "namespace": "ns", "labels": {"a": "b"}},
    "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
}


class _Server:
    """Answers a read with `live` and an apply with `result`: the two answers the decision reads."""

    def __init__(self, live: dict[str, Any] | None, result: dict[str, Any]) -> None:
        self.live, self.result = live, result

    def get(self, *_: Any) -> dict[str, Any] | None:
        return copy.deepcopy(self.live)

    def apply(self, obj: dict[str, Any], **_: Any) -> dict[str, Any]:
        return copy.deepcopy(self.result)


def _version(obj: dict[str, Any], rv: str, **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"] |= {"resourceVersion": rv, "uid": "u"}
    out.update(changes)
    return out


def test_a_status_write_between_the_read_and_the_apply_leaves_the_object_unchanged() -> None:
    live = _version(JOB, "1", status={"active": 1})
    result = _version(JOB, "2", status={"succeeded": 1})
    assert apply_object(_Server(live, result), JOB).action == "unchanged"  # type: ignore[arg-type]


def test_a_moved_version_with_a_changed_spec_or_label_is_configured() -> None:
    live = _version(JOB, "1")
    relabelled = _version(JOB, "2")
    relabelled["metadata"]["labels"] = {"a": "c"}
    assert apply_object(_Server(live, relabelled), JOB).action == "configured"  # type: ignore[arg-type]
    respecced = _version(JOB, "2", spec={"parallelism": 2})
    assert apply_object(_Server(live, respecced), JOB).action == "configured"  # type: ignore[arg-type]


def test_an_unmoved_version_is_unchanged_and_a_missing_object_created() -> None:
    live = _version(JOB, "1")
    assert apply_object(_Server(live, live), JOB).action == "unchanged"  # type: ignore[arg-type]
    assert apply_object(_Server(None, live), JOB).action == "created"  # type: ignore[arg-type]
