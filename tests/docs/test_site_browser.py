"""The built site in a real browser: headless Chromium (tests/bench/cdp.py, the bench report's driver) opens the
start page and a runbook link as an alert gives it, served from the built folder on a loopback port.

Asserted: each page's heading is the one expected, the runbook link scrolls its alert's section into view, the
screenshot holds the heading (its pixels change when the heading alone is hidden), no console error, and no
request leaves the loopback server (no web font, no CDN, no repository API: mkdocs.yml sets neither). The screenshots go to $K3DEPLOY_ARTIFACTS (default:
artifacts/ in the checkout, git-ignored).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import io
import os
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from PIL import Image, ImageChops

from k3deploy.observe.alert_rule import runbook_anchor
from tests.bench.cdp import Browser, chromium_binary
from tests.docs.site import Build
from tests.support.http_server import serving

ARTIFACTS = Path(os.environ.get("K3DEPLOY_ARTIFACTS", Path(__file__).resolve().parents[2] / "artifacts"))
VIEWPORT = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}

#: The heading an id names (the page's h1 without one): its text, its box in the viewport, and whether it is shown.
READ_HEADING = """(id => {
  const el = id ? document.getElementById(id) : document.querySelector('article h1, .md-content h1');
  if (!el) return null;
  const r = el.getBoundingClientRect();
  return {text: el.textContent.replace('\\u00b6', '').trim(), left: r.left, top: r.top, width: r.width,
          height: r.height, visible: getComputedStyle(el).visibility === 'visible'};
})"""


class _Quiet(SimpleHTTPRequestHandler):
    """The built folder over HTTP, without a log line per request."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _served(folder: Path) -> Iterator[str]:
    """`folder` on an ephemeral 127.0.0.1 port for the block; its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    with serving(server) as url:
        yield url + "/"


def _shot(browser: Browser, sid: str) -> Image.Image:
    data = browser.call("Page.captureScreenshot", {"format": "png"}, sid)["data"]
    return Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")


def _open(browser: Browser, url: str, anchor: str | None) -> tuple[dict[str, Any], Image.Image, Image.Image, str]:
    """Load `url` in a fresh tab; the heading's facts, a screenshot, one with that heading hidden, and the tab id."""
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    sid = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.call(f"{domain}.enable", session=sid)
    browser.call("Emulation.setDeviceMetricsOverride", VIEWPORT, sid)
    browser.call("Page.navigate", {"url": url}, sid)
    browser.wait_event("Page.loadEventFired", sid)
    expression = f"{READ_HEADING}({anchor!r})" if anchor else f"{READ_HEADING}(null)"
    heading = browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, sid)
    assert "exceptionDetails" not in heading, heading
    shot = _shot(browser, sid)
    hide = expression.replace("if (!el) return null;", "el.style.visibility = 'hidden'; return true;")
    browser.call("Runtime.evaluate", {"expression": hide, "returnByValue": True}, sid)
    hidden = _shot(browser, sid)
    return heading["result"]["value"], shot, hidden, sid


def _drawn_in(shot: Image.Image, hidden: Image.Image, box: dict[str, Any]) -> bool:
    """The screenshot's pixels inside the heading's box differ from those with the heading hidden."""
    crop = (int(box["left"]), int(box["top"]), int(box["left"] + box["width"]), int(box["top"] + box["height"]))
    return ImageChops.difference(shot.crop(crop), hidden.crop(crop)).getbbox() is not None


def test_start_page_and_a_runbook_render_with_their_headings(site: Build, tmp_path: Path) -> None:
    binary = chromium_binary()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed: `bash .ci/setup` unpacks it (.ci/chromium)")
        pytest.skip("chromium is not installed; run `bash .ci/setup`")
    anchor = runbook_anchor("K3DeployLeaderNotReady")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with _served(site.site) as base:
        browser = Browser(binary, tmp_path / "profile")
        try:
            start, start_shot, start_hidden, start_sid = _open(browser, base, None)
            runbook, runbook_shot, runbook_hidden, runbook_sid = _open(
                browser, f"{base}operations/runbooks/#{anchor}", anchor
            )
            events = list(browser.events)
        finally:
            browser.close()
    start_shot.save(ARTIFACTS / "docs-start.png")
    runbook_shot.save(ARTIFACTS / "docs-runbook.png")

    assert start["text"] == "k3deploy" and start["visible"]
    assert _drawn_in(start_shot, start_hidden, start)
    # The alert's link lands on its section, scrolled into the viewport, drawn in the screenshot.
    assert runbook["text"] == "Runbook: K3DeployLeaderNotReady" and runbook["visible"]
    assert 0 <= runbook["top"] < VIEWPORT["height"] - runbook["height"]
    assert _drawn_in(runbook_shot, runbook_hidden, runbook)

    mine = [e for e in events if e.get("sessionId") in (start_sid, runbook_sid)]
    errors = [e for e in mine if e["method"] == "Runtime.exceptionThrown"]
    errors += [e for e in mine if e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"]
    assert errors == [], [e["params"]["entry"].get("url") for e in errors if "entry" in e["params"]]
    requested = {e["params"]["request"]["url"] for e in mine if e["method"] == "Network.requestWillBeSent"}
    fetched = {u for u in requested if urlsplit(u).scheme != "data"}  # the theme's inline icons fetch nothing
    assert fetched and {urlsplit(u).netloc for u in fetched} == {urlsplit(base).netloc}, fetched
