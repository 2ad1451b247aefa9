"""LeaderWorkerSet ControllerRevisions as the LWS controller writes them: the imitation's controller uses the unit
tier's mirror (tests/support/lws_revision.py, proven against the real controller by tests/realk8s/test_lws_revision.py).
"""

from __future__ import annotations

from tests.support.lws_revision import PREFIX, REVISION_KEY, go_marshal, new_revision, patch, revision_key

__all__ = ["PREFIX", "REVISION_KEY", "go_marshal", "new_revision", "patch", "revision_key"]
