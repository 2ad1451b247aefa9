"""watch's table and JSON line: what a failed scrape looks like, and how figures are written."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from rich.console import Console

from k3deploy.errors import ScrapeError
from k3deploy.observe.watch_figures import WatchFigures, figures_from_queries
from k3deploy.observe.watch_loop import Tick
from k3deploy.observe.watch_view import ViewState, format_value, json_line, render
from k3deploy.profile.model import TargetsSpec

AT = datetime(2026, 11, 30, 21, 0, 5, tzinfo=UTC)


def _text(state: ViewState) -> str:
    console = Console(width=160, record=True, no_color=True)
    console.print(render(state))
    return console.export_text()


def test_failed_scrape_keeps_the_last_figures_under_a_red_row() -> None:
    state = ViewState(source="http://x/metrics", profile="p", targets=TargetsSpec(decode_tok_s=100))
    state.update(Tick(AT, WatchFigures(decode_tok_s=80.0, output_tok_s=400.0)))
    state.update(Tick(AT.replace(second=10), None, ScrapeError("http://x/metrics answered 503: down", "h")))
    text = _text(state)
    assert "scrape failed 21:00:10: http://x/metrics answered 503: down" in text
    assert "400.0" in text and "▼ below target" in text and "21:00:05" in text  # the last good figures, and when
    state.update(Tick(AT.replace(second=15), WatchFigures(decode_tok_s=120.0)))
    text = _text(state)
    assert "scrape failed" not in text and "below target" not in text and state.failures == 1


def test_before_the_second_scrape_the_view_says_so() -> None:
    assert "waiting for the second scrape" in _text(ViewState(source="u", profile="p", targets=TargetsSpec()))


def test_counter_reset_is_said() -> None:
    state = ViewState(source="u", profile="p", targets=TargetsSpec())
    state.update(Tick(AT, WatchFigures(counter_resets=['vllm:generation_tokens_total{engine="1"}'])))
    assert 'counter reset (server restarted?): vllm:generation_tokens_total{engine="1"}' in _text(state)


def test_values_are_written_in_their_units() -> None:
    assert format_value(None, "tok/s") == "—"
    assert format_value(0.912, "%") == "91.2 %"
    assert (format_value(0.0134, "s"), format_value(2.5, "s")) == ("13 ms", "2.50 s")
    assert (format_value(3.318, "tok"), format_value(715.04, "tok/s"), format_value(3.0, "")) == ("3.32", "715.0", "3")


def test_json_line_of_figures_and_of_a_failure() -> None:
    targets = TargetsSpec(decode_tok_s=100, min_acceptance_length=3)
    ok = json.loads(
        json_line(Tick(AT, WatchFigures(decode_tok_s=80.0, per_position_acceptance={0: 0.9})), "metrics", "u", targets)
    )
    assert ok["time"] == "2026-11-30T21:00:05.000+00:00" and ok["below"] == ["decode_tok_s"] and ok["error"] is None
    assert ok["figures"]["per_position_acceptance"] == {"0": 0.9}
    assert ok["targets"] == {"decode_tok_s": 100, "min_acceptance_length": 3}
    failed = json.loads(json_line(Tick(AT, None, ScrapeError("down", "h")), "prometheus", "u", targets))
    assert failed["figures"] is None and failed["error"] == "down" and failed["below"] == []


def test_negative_or_absurd_figures_are_marked_impossible_and_never_judged() -> None:
    """Prometheus answered what no server can measure (an exporter's or a recording rule's fault): each such
    figure is shown with why, is never "below target", and the JSON line names it."""
    figures = figures_from_queries(
        {
            "decode_tok_s": [({}, -5.0)],
            "output_tok_s": [({}, 1e308)],
            "kv_cache_usage": [({}, 1.7)],
            "mean_acceptance_length": [({}, 1067.0)],
            "acceptance_rate": [({}, 152.0)],
            "running": [({}, 3.0)],
            "per_position_acceptance": [({"position": "0"}, 1.5), ({"position": "1"}, 0.5)],
        }
    )
    targets = TargetsSpec(decode_tok_s=100, min_acceptance_length=2.0)
    state = ViewState(source="prometheus", profile="p", targets=targets)
    state.update(Tick(AT, figures))
    text = _text(state)
    for figure in ("decode tok/s per request", "output tok/s", "KV-cache usage", "mean acceptance length"):
        line = next(line for line in text.splitlines() if figure in line)
        assert "✗ impossible" in line and "below target" not in line, line
    assert "-5 is outside [0, 1e+12]" in text and "1067 is outside [1, 17]" in text
    running = next(line for line in text.splitlines() if "running requests" in line)
    assert "impossible" not in running
    doc = json.loads(json_line(Tick(AT, figures), "prometheus", "http://p", targets))
    assert doc["below"] == []
    assert set(doc["impossible"]) == {
        "decode_tok_s",
        "output_tok_s",
        "kv_cache_usage",
        "mean_acceptance_length",
        "acceptance_rate",
        "per_position_acceptance.0",
    }
