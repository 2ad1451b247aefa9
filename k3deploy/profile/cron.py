"""A CronJob schedule read as the CronJob controller reads it, for one question: the longest gap between two runs.
Pure.

The canary's staleness alert fires when no run succeeded for twice that gap, and its drift rule compares a run with
the one a gap before. Grammar as Kubernetes' (robfig/cron/v3's standard parser, which the CronJob controller uses):
five fields `minute hour day-of-month month day-of-week`, each `*`, `N`, `A-B`, a `/step` on either, comma lists,
month and weekday names (jan..dec, sun..sat), 7 as Sunday; or a macro (@yearly, @annually, @monthly, @weekly,
@daily, @midnight, @hourly). As cron does, when both day fields are restricted a day matching either one runs. A
`TZ=`/`CRON_TZ=` prefix is refused: the CronJob's spec.timeZone is the place for it.
"""

from __future__ import annotations

import datetime as dt
import itertools

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
#: (name, lowest, highest, names) per field.
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, {n: i + 1 for i, n in enumerate(_MONTHS)}),
    ("day of week", 0, 7, {n: i for i, n in enumerate(_DAYS)}),
)


def _number(text: str, names: dict[str, int], what: str) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise ValueError(f"{what}: {text!r} is not a number")
    return int(text)


def _field(text: str, index: int) -> tuple[set[int], bool]:
    """The values a field allows, and whether it was `*` (unrestricted)."""
    what, low, high, names = _FIELDS[index]
    values: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        step = _number(step_text, {}, what) if step_text else 1
        if step < 1:
            raise ValueError(f"{what}: a step must be at least 1")
        if span == "*":
            first, last = low, high
        elif "-" in span:
            a, b = span.split("-", 1)
            first, last = _number(a, names, what), _number(b, names, what)
        else:
            first = _number(span, names, what)
            last = high if step_text else first
        if not low <= first <= last <= high:
            raise ValueError(f"{what}: {part!r} is outside {low}-{high}")
        values.update(range(first, last + 1, step))
    if index == 4 and 7 in values:
        values = (values - {7}) | {0}
    return values, text.startswith("*")


def parse(schedule: str) -> tuple[list[set[int]], bool, bool]:
    """The five fields' allowed values, and whether the day-of-month and day-of-week fields were `*`; ValueError
    naming the fault for a schedule the CronJob controller would refuse."""
    text = schedule.strip()
    if text.split(" ", 1)[0].upper().startswith(("TZ=", "CRON_TZ=")):
        raise ValueError("a TZ= prefix is not allowed in a CronJob's schedule (set spec.timeZone instead)")
    text = MACROS.get(text.lower(), text)
    parts = text.split()
    if len(parts) != 5:
        raise ValueError(f"{schedule!r} is not five fields (minute hour day-of-month month day-of-week) or a macro")
    parsed = [_field(part, i) for i, part in enumerate(parts)]
    return [values for values, _ in parsed], parsed[2][1], parsed[4][1]


def _day_runs(day: dt.date, fields: list[set[int]], dom_star: bool, dow_star: bool) -> bool:
    if day.month not in fields[3]:
        return False
    dom, dow = day.day in fields[2], (day.isoweekday() % 7) in fields[4]
    return dom and dow if dom_star or dow_star else dom or dow


def longest_gap_s(schedule: str) -> int:
    """The longest time between two consecutive runs, in seconds, over four years (every month length and weekday
    alignment once); ValueError for a bad schedule or one that never runs."""
    fields, dom_star, dow_star = parse(schedule)
    day_minutes = sorted(h * 60 + m for h, m in itertools.product(fields[1], fields[0]))
    start = dt.date(2024, 1, 1)
    runs: list[int] = []
    for offset in range(4 * 366):
        day = start + dt.timedelta(days=offset)
        if _day_runs(day, fields, dom_star, dow_star):
            runs += [offset * 1440 + minute for minute in day_minutes]
    if len(runs) < 2:
        raise ValueError(f"{schedule!r} runs fewer than twice in four years")
    return 60 * max(b - a for a, b in itertools.pairwise(runs))
