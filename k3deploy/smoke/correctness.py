"""Correctness probes: prompts whose answers a machine can check. Pure.

Speed says nothing about a broken all-reduce across nodes: such a model still streams fluent text at full rate.
These probes ask for answers with one right form (a number, a copied string, a JSON object) at temperature 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

Verdict = tuple[bool, str]


@dataclass(frozen=True, slots=True)
class Probe:
    """A prompt and the function that judges its answer."""

    id: str
    prompt: str
    judge: Callable[[str], Verdict]


def _strip_reasoning(answer: str) -> str:
    """The part after a closing think tag, when a reasoning model left its thoughts in the text."""
    return answer.rsplit("</think>", 1)[-1]


def expect_number(expected: int) -> Callable[[str], Verdict]:
    """Pass when the last integer in the answer equals `expected`."""

    def judge(answer: str) -> Verdict:
        numbers = re.findall(r"-?\d[\d,]*", _strip_reasoning(answer))
        if not numbers:
            return False, f"no number in the answer (expected {expected})"
        got = int(numbers[-1].replace(",", ""))
        return (got == expected, f"answered {got}, expected {expected}")

    return judge


def expect_copy(token: str) -> Callable[[str], Verdict]:
    """Pass when the answer contains `token` exactly."""

    def judge(answer: str) -> Verdict:
        ok = token in _strip_reasoning(answer)
        return ok, f"{'found' if ok else 'did not find'} {token!r} in the answer"

    return judge


def expect_json(expected: dict[str, object]) -> Callable[[str], Verdict]:
    """Pass when the answer holds a JSON object that parses and contains every expected key/value."""

    def judge(answer: str) -> Verdict:
        text = _strip_reasoning(answer)
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            return False, "no JSON object in the answer"
        try:
            obj = json.loads(text[start : end + 1])
        except json.JSONDecodeError as exc:
            return False, f"the JSON object does not parse: {exc.msg}"
        if not isinstance(obj, dict):
            return False, "the JSON value is not an object"
        wrong = {k: obj.get(k) for k, v in expected.items() if obj.get(k) != v}
        return (not wrong, "all keys match" if not wrong else f"wrong or missing keys: {wrong}")

    return judge


PROBES: tuple[Probe, ...] = (
    Probe("arithmetic-multiply", "What is 347 multiplied by 29? Reply with only the number.", expect_number(10063)),
    Probe("arithmetic-sum", "Add 1234, 5678 and 9012. Reply with only the number.", expect_number(15924)),
    Probe(
        "copy-string",
        "Repeat this code exactly, with nothing else: QX7-PLUM-4821-ZETA",
        expect_copy("QX7-PLUM-4821-ZETA"),
    ),
    Probe(
        "json-object",
        'Reply with only a JSON object with the keys "city" set to "Lyon", "year" set to 1998 and "ok" set to true.',
        expect_json({"city": "Lyon", "year": 1998, "ok": True}),
    ),
)


def judge_answer(probe: Probe, answer: str | None) -> Verdict:
    """The probe's verdict on an answer; a missing answer fails."""
    if answer is None or not answer.strip():
        return False, "empty answer"
    return probe.judge(answer)
