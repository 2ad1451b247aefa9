"""The smoke report inside a smoke Job's log: the JSON document `k3deploy smoke -o json` prints last.

The Job's container log holds both streams in the order written: the waiting notices and the verdict table
(stderr), then the report (stdout, indented JSON that starts on a line of its own). The report is the last JSON object
of kind `k3deploy.smoke` that decodes from the start of a line; anything after it is ignored.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from k3deploy.report.smoke import SmokeReport

KIND = "k3deploy.smoke"


def report_from_log(text: str) -> SmokeReport | None:
    """The last smoke report in `text`, None when there is none (or it does not validate)."""
    decoder = json.JSONDecoder()
    starts = []
    offset = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("{"):
            starts.append(offset + len(line) - len(line.lstrip()))
        offset += len(line)
    for start in reversed(starts):
        try:
            obj, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("kind") != KIND:
            continue
        try:
            return SmokeReport.model_validate(obj)
        except ValidationError:
            continue
    return None
