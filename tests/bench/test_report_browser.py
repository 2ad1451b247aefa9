"""The HTML bench report in a real browser: headless Chromium (Debian's package, unpacked by .ci/chromium) loads it
from a file over CDP; the rendered DOM is read back and checked against the JSON reports, and a screenshot is kept.

Asserted: every metrics table is there with one row per cell and the numbers the JSON holds (as shown, and the
exact value in data-value); each chart has its table beside it (laid out to its right); published references are
drawn only over the tier they belong to (never `overall`); the speedup chart has its 1.0x line; axis ticks are
round; the rehearsal warning shows; no console error, no exception, and no request but the file itself.
The screenshot goes to $K3DEPLOY_ARTIFACTS (default: artifacts/ in the checkout, git-ignored).
"""

from __future__ import annotations

import base64
import itertools
import math
import os
from pathlib import Path
from typing import Any

import pytest

from k3deploy.bench import charts, html_report
from k3deploy.bench.datasets import load_dataset, select
from k3deploy.bench.runner import BenchPlan, run_bench
from k3deploy.profile import load_profile
from k3deploy.report.bench import BenchReport
from tests.bench.cdp import Browser, chromium_binary
from tests.smoke.scripted_server import Script, scripted_server

ARTIFACTS = Path(os.environ.get("K3DEPLOY_ARTIFACTS", Path(__file__).resolve().parents[2] / "artifacts"))

READ_DOM = """(() => {
  const box = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width}; };
  return {
    metrics: [...document.querySelectorAll('table.metrics')].map(t => ({
      run: t.dataset.run,
      rows: [...t.querySelectorAll('tr[data-category]')].map(r => ({
        category: r.dataset.category, concurrency: r.dataset.concurrency, rate: r.dataset.rate,
        cells: Object.fromEntries([...r.querySelectorAll('td[data-field]')].map(
          td => [td.dataset.field, [td.textContent, td.dataset.value]])),
      })),
    })),
    pairs: [...document.querySelectorAll('div.pair')].filter(p => p.querySelector('svg')).map(p => ({
      chart: box(p.querySelector('svg')), table: box(p.querySelector('table')),
      rows: p.querySelectorAll('table tr').length, title: p.querySelector('svg title').textContent,
    })),
    refGroups: [...document.querySelectorAll('svg .ref[data-group]')].map(l => l.dataset.group),
    fullRefs: [...document.querySelectorAll('svg[aria-label="speedup"] .ref:not([data-group])')].length,
    ticks: [...document.querySelectorAll('svg')].map(s => [...s.querySelectorAll('text.tick')].map(t => t.textContent)),
    warning: document.getElementById('rehearsal-warning')?.textContent ?? null,
    speculativeRows: [...document.querySelectorAll('div.pair table')].filter(
      t => t.caption && t.caption.textContent === 'speculative config').map(t => t.rows.length),
  };
})()"""


@pytest.fixture(scope="module")
def runs() -> list[BenchReport]:
    """Two runs against the scripted server, two repeats each, with the GB300 profile's published figures."""
    dataset = load_dataset("builtin", "throughput")
    sets = ["targets.baseline_decode_tok_s=118", "targets.decode_tok_s=370", "targets.peak_decode_tok_s=464"]
    out = []
    for label, delay, pattern in (("base", 0.003, [1]), ("spec", 0.001, [3, 2, 4, 1])):
        plan = BenchPlan(dataset, select(dataset, None, 2), [1, 2], 24, 2, label, repeat=2, slo={"ttft": 200.0})
        with scripted_server(Script(chunk_delay_s=delay, tokens_per_chunk=pattern)) as srv:
            out.append(run_bench(load_profile("local-cpu", sets), srv.url, plan))
    return out


def render(path: Path, workdir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], bytes]:
    """Load `path` in headless Chromium: the DOM facts, the events seen, and a full-page PNG."""
    binary = chromium_binary()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: `bash .ci/setup` unpacks it (.ci/chromium)")
        pytest.skip("chromium is not installed; run `bash .ci/setup`")
    browser = Browser(binary, workdir / "profile")
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.call(f"{domain}.enable", session=sid)
        metrics = {"width": 1500, "height": 1000, "deviceScaleFactor": 1, "mobile": False}
        browser.call("Emulation.setDeviceMetricsOverride", metrics, sid)
        browser.call("Page.navigate", {"url": path.as_uri()}, sid)
        browser.wait_event("Page.loadEventFired", sid)
        dom = browser.call("Runtime.evaluate", {"expression": READ_DOM, "returnByValue": True}, sid)
        assert "exceptionDetails" not in dom, dom
        shot = browser.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, sid)
        events = [e for e in browser.events if e.get("sessionId") == sid]
        return dom["result"]["value"], events, base64.b64decode(shot["data"])
    finally:
        browser.close()


def test_report_renders_in_chromium_with_the_jsons_numbers(runs: list[BenchReport], tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(charts.html(runs), encoding="utf-8")
    dom, events, png = render(page, tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "bench-report.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000

    # No console error, no exception, no request but the page itself.
    errors = [e for e in events if e["method"] == "Runtime.exceptionThrown"]
    errors += [
        e for e in events if e["method"] == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert")
    ]
    errors += [e for e in events if e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"]
    assert errors == []
    requested = {e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"}
    assert requested == {page.as_uri()}

    # Every cell of every run, with the JSON's numbers.
    assert [t["run"] for t in dom["metrics"]] == [r.label for r in runs]
    for table, report in zip(dom["metrics"], runs, strict=True):
        assert len(table["rows"]) == len(report.cells) + len(report.overall)
        for row in table["rows"]:
            rate = float(row["rate"]) if row["rate"] else None
            cell = report.cell(row["category"], int(row["concurrency"]), rate)
            assert cell is not None
            expected = {
                "decode_tok_s.median": cell.decode_tok_s.median,
                "throughput.output_throughput": cell.throughput.output_throughput,
                "throughput.request_goodput": cell.throughput.request_goodput,
                "ttft_ms.p99": cell.ttft_ms.at(99),
                "tpot_ms.p50": cell.tpot_ms.at(50),
                "itl_ms.p95": cell.itl_ms.at(95),
                "e2el_ms.mean": cell.e2el_ms.mean,
            }
            for field, value in expected.items():
                shown, raw = row["cells"][field]
                assert shown == html_report.fmt(value) and float(raw) == value, (field, row)
            assert len(row["cells"]) == 6 + 4 * 5  # decode, spread, 3 throughputs, goodput; 4 latencies x 5 stats

    # Each chart with its table beside it, to its right, on one screen width.
    assert len(dom["pairs"]) == 4
    for pair in dom["pairs"]:
        assert pair["table"]["left"] >= pair["chart"]["right"] and pair["rows"] > 1, pair
    # Published figures only over their tier (low_entropy here; no `random` category), never overall.
    assert sorted(dom["refGroups"]) == ["low_entropy", "low_entropy"]
    assert dom["fullRefs"] == 1  # the speedup chart's 1.0x line
    for ticks in dom["ticks"]:
        values = [float(t.rstrip("x").replace(",", "")) for t in ticks]
        steps = {round(b - a, 9) for a, b in itertools.pairwise(values)}
        assert values[0] == 0 and len(steps) == 1, ticks
        (step,) = steps
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert round(mantissa, 6) in (1, 2, 2.5, 5), ticks
    assert dom["warning"] == html_report.REHEARSAL_WARNING
    assert dom["speculativeRows"] == [3, 3]  # method, model, num_speculative_tokens as rows of a table
