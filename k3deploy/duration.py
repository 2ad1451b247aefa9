"""Durations on the command line: the one parser every flag that takes seconds goes through. Pure.

A duration is a finite, positive number of seconds, written as plain seconds (`90`, `0.5`) or Go-style with
units (`90s`, `15m`, `3h`, `1h30m`, `500ms`), as `kubectl --request-timeout` and `kubectl wait --timeout` take
them. `nan`, `inf`, negative and zero values are refused: a deadline of NaN or infinity never ends, and a
timeout of zero does not mean "no timeout" anywhere in k3deploy.
"""

from __future__ import annotations

import math
import re

from k3deploy.errors import UsageError

#: Seconds per unit, the units Go's time.ParseDuration knows that make sense for a deadline.
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)(ms|h|m|s)")
_WHOLE = re.compile(r"^(?:(?:\d+(?:\.\d+)?|\.\d+)(?:ms|h|m|s))+$")
#: Longer than any deadline a rollout or a smoke run needs (a week); a larger figure is a typo.
MAX_SECONDS = 7 * 24 * 3600.0
HINT = "use seconds or a Go-style duration: 90s, 15m, 2h30m"


def parse_duration(text: str | None, flag: str = "--timeout") -> float | None:
    """Seconds from `90`, `90s`, `15m`, `3h`, `1h30m` or `500ms`; None passes through.

    Anything else, and any value that is not finite and positive (nan, inf, -3, 0) or longer than a week,
    is a UsageError naming `flag`.
    """
    if text is None:
        return None
    value = text.strip()
    if _WHOLE.match(value):
        seconds = sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(value))
    else:
        try:
            seconds = float(value)
        except ValueError:
            raise UsageError(f"{flag} {text!r} is not a duration", hint=HINT) from None
        if not math.isfinite(seconds):
            raise UsageError(f"{flag} {text!r} is not a finite duration", hint=HINT)
    if seconds <= 0:
        raise UsageError(f"{flag} {text!r} must be positive", hint=f"e.g. {flag} 15m")
    if seconds > MAX_SECONDS:
        raise UsageError(f"{flag} {text!r} is longer than a week", hint=f"e.g. {flag} 3h")
    return seconds
