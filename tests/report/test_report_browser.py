"""The report in a real browser: headless Chromium, driven over the DevTools Protocol.

The example report is served from 127.0.0.1; ``index.html`` and every standalone chart page
are opened. The test fails on any console error or warning, uncaught exception, browser log
error (CSP violations, failed loads), failed or >= 400 response, and on any request whose
URL is not on the local server (or ``data:``/``blob:``/``about:``). Chromium's resolver maps
every host but 127.0.0.1 to "not found", so a request that would leave the machine is
recorded and fails without ever reaching the network. Each page must render every chart
as an SVG with marks. A full-page screenshot of ``index.html`` is written to the test's
temporary directory (``index.png``).

A second report, of a run with a crashed group (96 of 96 trials SIGSEGV) beside healthy
ones, is checked for its "Not a measurement of the agent" banners as the browser lays them
out: present, visible (computed style, bounding box, not covered, on the first screen), red,
and on no healthy card; screenshots ``banner.png`` (first screen) and ``index.png``.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from evalnoise.report import CHART_STEMS

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.slow

ws_sync = pytest.importorskip("websockets.sync.client", reason="needs the websockets package")

ALLOWED_SCHEMES = ("data:", "blob:", "about:")

# Counts the charts that rendered: a vega-embed container holding an SVG with drawn marks.
RENDERED_JS = """
(() => {
  const charts = [...document.querySelectorAll('div.chart')];
  const drawn = charts.filter(d => d.querySelector(
      'svg.marks g.mark-symbol path, svg.marks g.mark-rule line, svg.marks g.mark-line path'));
  return {charts: charts.length, drawn: drawn.length};
})()
"""


class CDP:
    """A minimal synchronous Chrome DevTools Protocol client for one page target."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict] = []

    @classmethod
    @contextlib.contextmanager
    def connect(cls, ws_url: str):
        with ws_sync.connect(ws_url, max_size=None, open_timeout=10) as ws:
            cdp = cls(ws)
            for domain in ("Page", "Runtime", "Log", "Network"):
                cdp.send(f"{domain}.enable")
            yield cdp

    def _recv(self, deadline: float) -> dict:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no DevTools message in time")
        return json.loads(self.ws.recv(timeout=remaining))

    def send(self, method: str, params: dict | None = None, timeout: float = 15.0) -> dict:
        self.next_id += 1
        msg_id = self.next_id
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            msg = self._recv(deadline)
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, since: int, timeout: float = 15.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for ev in self.events[since:]:
                if ev["method"] == method:
                    return ev
            msg = self._recv(deadline)
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expression: str) -> object:
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluation failed: {res['exceptionDetails']}")
        return res["result"].get("value")


@contextlib.contextmanager
def serve(directory: Path):
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def chromium(profile_dir: Path, log_path: Path):
    args = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        # Nothing but the local server resolves: an outgoing request fails (and is caught).
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        f"--user-data-dir={profile_dir}",
        "--remote-debugging-port=0",
        "--window-size=1280,900",
        "about:blank",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        port_file = profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + 20
        while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
            if proc.poll() is not None:
                raise RuntimeError(f"chromium exited early:\n{log_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port = int(port_file.read_text().splitlines()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            targets = json.load(resp)
        page = next(t for t in targets if t["type"] == "page")
        yield page["webSocketDebuggerUrl"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)  # our own session: the browser and children
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def problems_in(events: list[dict], base_url: str) -> list[str]:
    """Everything the page did that the report must never do."""
    out = []
    for ev in events:
        method, params = ev["method"], ev.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in (
            "error",
            "warning",
            "assert",
        ):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            out.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            out.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            entry = params["entry"]
            out.append(f"browser log {entry['level']}: {entry.get('text')} {entry.get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not (url.startswith(base_url) or url.startswith(ALLOWED_SCHEMES)):
                out.append(f"request leaves the machine: {url}")
        elif method == "Network.loadingFailed":
            out.append(f"load failed: {params.get('errorText')} ({params.get('requestId')})")
        elif method == "Network.responseReceived" and params["response"]["status"] >= 400:
            out.append(f"HTTP {params['response']['status']}: {params['response']['url']}")
    return out


def open_page(
    cdp: CDP, url: str, n_charts: int, timeout: float = 20.0, render_timeout: float = 20.0
) -> dict:
    """Load ``url``; wait until ``n_charts`` charts are drawn (or the time is up)."""
    since = len(cdp.events)
    cdp.send("Page.navigate", {"url": url})
    cdp.wait_event("Page.loadEventFired", since, timeout=timeout)
    deadline = time.monotonic() + render_timeout
    while True:
        state = cdp.evaluate(RENDERED_JS)
        if state["charts"] == n_charts and state["drawn"] == n_charts:
            return state
        if time.monotonic() > deadline:
            return state
        time.sleep(0.1)


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs /usr/bin/chromium (tools/install-browser.sh)"
)
def test_report_renders_offline_in_chromium(built_report, example_inputs, tmp_path: Path) -> None:
    out, files = built_report
    chart_pages = sorted(p.name for p in files if p.suffix == ".html" and p.name != "index.html")
    assert len(chart_pages) == len(CHART_STEMS)  # the example report has every chart
    started = time.monotonic()
    with (
        serve(out) as base_url,
        chromium(tmp_path / "profile", tmp_path / "chromium.log") as ws,
        CDP.connect(ws) as cdp,
    ):
        state = open_page(cdp, base_url + "index.html", n_charts=len(chart_pages))
        assert state == {"charts": len(CHART_STEMS), "drawn": len(CHART_STEMS)}, state
        # Something of every part of the page is there.
        text = cdp.evaluate("document.body.innerText")
        assert "Evaluation Card" in text and "between-query SE" in text
        assert "as incorrect" in text and "docker" in text
        # Where the noise comes from: laid out with real content, its chart drawn
        seen = cdp.evaluate(ATTRIBUTION_JS)
        assert seen["height"] > 400 and seen["display"] != "none", seen
        assert seen["chartDrawn"], seen
        for heading in (
            "Infra policy sensitivity",
            "Resource-sensitive tasks",
            "Flaky tasks",
            "Infrastructure share of variance",
        ):
            assert heading in seen["text"]
        assert "the infra policy column of its multiverse table" in seen["text"]
        assert "need between the limits" in seen["text"]
        assert "infra outcomes concentrate on this task" in seen["text"]
        assert "not run: no rescores given" in seen["text"]
        assert seen["policyCard"] == 2  # the policy line on both cards
        # the multiverse: laid out, one table per group, a row per cell, the reference marked
        universe = cdp.evaluate(MULTIVERSE_JS)
        assert universe["height"] > 200 and universe["display"] != "none", universe
        cells = [len(g["multiverse"]["cells"]) for g in example_inputs["groups"]]
        assert universe["rows"] == cells and universe["marked"] == [1] * len(cells), universe
        assert "the analysis choices move the headline by" in universe["text"]
        # the adaptive run's section: laid out, one row per agent with why it stopped
        adaptive = cdp.evaluate(SEQUENTIAL_JS)
        assert adaptive["height"] > 100 and adaptive["display"] != "none", adaptive
        assert adaptive["rows"] == 2 and "target met" in adaptive["text"], adaptive
        assert "anytime-valid" in adaptive["text"]
        # pass^k against k: one line, one band and a point per k for every group, as laid out
        passk = cdp.evaluate(PASSK_JS)
        groups = example_inputs["groups"]
        assert passk["lines"] == len(groups) and passk["areas"] == len(groups), passk
        assert passk["points"] == sum(len(g["pass_k"]["k"]) for g in groups), passk
        assert sorted(passk["legend"]) == sorted(g["group"] for g in groups), passk
        assert passk["width"] > 400 and passk["height"] > 250, passk
        assert "pass^k" in passk["text"] and passk["display"] != "none"
        clip = {k: passk[k] for k in ("x", "y", "width", "height")} | {"scale": 1}
        shot = cdp.send(
            "Page.captureScreenshot",
            {"format": "png", "clip": clip, "captureBeyondViewport": True},
            timeout=30,
        )
        (tmp_path / "pass_hat_k.png").write_bytes(base64.b64decode(shot["data"]))
        assert (tmp_path / "pass_hat_k.png").read_bytes().startswith(b"\x89PNG")
        # no group of the example is marked as a failure
        assert cdp.evaluate("document.querySelectorAll('.banner').length") == 0
        # Full-page screenshot.
        metrics = cdp.send("Page.getLayoutMetrics")
        height = int(metrics["cssContentSize"]["height"])
        cdp.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        shot = cdp.send("Page.captureScreenshot", {"format": "png"}, timeout=30)
        png = base64.b64decode(shot["data"])
        assert png.startswith(b"\x89PNG")
        (tmp_path / "index.png").write_bytes(png)
        cdp.send("Emulation.clearDeviceMetricsOverride")
        for page in chart_pages:
            state = open_page(cdp, base_url + page, n_charts=1)
            assert state == {"charts": 1, "drawn": 1}, (page, state)
        problems = problems_in(cdp.events, base_url)
    assert problems == []
    requested = [
        e["params"]["request"]["url"]
        for e in cdp.events
        if e["method"] == "Network.requestWillBeSent"
    ]
    assert base_url + "index.html" in requested  # the network events were really seen
    assert time.monotonic() - started < 30


# What the browser lays out of the attribution section and the cards' policy line.
ATTRIBUTION_JS = """
(() => {
  const sec = document.getElementById('attribution');
  const r = sec.getBoundingClientRect();
  const chart = sec.querySelector('div.chart');
  return {
    height: r.height, display: getComputedStyle(sec).display, text: sec.innerText,
    chartDrawn: !!(chart && chart.querySelector('svg.marks g.mark-symbol path')),
    policyCard: [...document.querySelectorAll('article.card th')]
      .filter(th => th.innerText === 'Infra policy sensitivity').length,
  };
})()
"""


# What the browser lays out of the multiverse section: per table its cell rows and marked rows.
MULTIVERSE_JS = """
(() => {
  const sec = document.getElementById('multiverse');
  const tables = [...sec.querySelectorAll('table.multiverse')];
  return {
    height: sec.getBoundingClientRect().height, display: getComputedStyle(sec).display,
    text: sec.innerText,
    rows: tables.map(t => t.querySelectorAll('tr').length - 1),
    marked: tables.map(t => [...t.querySelectorAll('tr.reference')]
      .filter(tr => tr.innerText.includes('the headline')).length),
  };
})()
"""


# What the browser draws of the pass^k chart: its marks, legend and box on the page.
PASSK_JS = """
(() => {
  const sec = document.getElementById('pass_hat_k');
  const chart = sec.querySelector('div.chart');
  const r = chart.getBoundingClientRect();
  return {
    lines: chart.querySelectorAll('svg.marks g.mark-line path').length,
    areas: chart.querySelectorAll('svg.marks g.mark-area path').length,
    points: chart.querySelectorAll('svg.marks g.mark-symbol.role-mark path').length,
    legend: [...chart.querySelectorAll('g.role-legend-label text')].map(t => t.textContent),
    x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height,
    display: getComputedStyle(sec).display, text: sec.innerText,
  };
})()
"""


# What the browser lays out of the adaptive run's section.
SEQUENTIAL_JS = """
(() => {
  const sec = document.getElementById('sequential');
  const r = sec.getBoundingClientRect();
  return {
    height: r.height, display: getComputedStyle(sec).display, text: sec.innerText,
    rows: sec.querySelectorAll('table.sequential tr:not(.reason)').length - 1,
  };
})()
"""


CANARY = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script src="https://cdn.example.com/vega.js"></script></head>
<body><div class="chart"></div><script>console.error("canary");</script></body></html>
"""


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs /usr/bin/chromium (tools/install-browser.sh)"
)
def test_harness_catches_outgoing_requests_and_console_errors(tmp_path: Path) -> None:
    """The checks above can fail: a page loading a CDN script and logging an error."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "canary.html").write_text(CANARY, encoding="utf-8")
    with (
        serve(site) as base_url,
        chromium(tmp_path / "profile", tmp_path / "chromium.log") as ws,
        CDP.connect(ws) as cdp,
    ):
        state = open_page(cdp, base_url + "canary.html", n_charts=1, render_timeout=1)
        problems = problems_in(cdp.events, base_url)
    assert state == {"charts": 1, "drawn": 0}
    assert "request leaves the machine: https://cdn.example.com/vega.js" in problems
    assert "console.error: canary" in problems
    assert any(p.startswith("load failed") for p in problems)


# What the browser sees of the health banners: geometry, computed style, what covers them.
BANNER_JS = """
(() => {
  const box = el => {
    const r = el.getBoundingClientRect();
    const s = getComputedStyle(el);
    const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    const hit = document.elementFromPoint(cx, cy);
    return {
      top: r.top + window.scrollY, left: r.left, width: r.width, height: r.height,
      display: s.display, visibility: s.visibility, opacity: s.opacity,
      background: s.backgroundColor, color: s.color,
      onTop: hit !== null && (hit === el || el.contains(hit)),
      text: el.innerText,
    };
  };
  const top = document.getElementById('invalid-groups');
  const expected = document.getElementById('expected-failures');
  const nav = document.querySelector('nav');
  const cards = [...document.querySelectorAll('article.card')].map(card => ({
    id: card.id,
    valid: card.dataset.valid,
    banners: [...card.querySelectorAll('.banner.invalid')].map(b => {
      card.scrollIntoView(); return box(b);
    }),
    notes: [...card.querySelectorAll('.note.expected')].map(
      n => getComputedStyle(n).backgroundColor),
  }));
  window.scrollTo(0, 0);
  return {
    top: top && box(top),
    expected: expected && box(expected),
    navTop: nav.getBoundingClientRect().top + window.scrollY,
    viewport: window.innerHeight,
    cards,
  };
})()
"""

RED = "rgb(183, 28, 28)"


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs /usr/bin/chromium (tools/install-browser.sh)"
)
def test_invalid_group_banner_is_rendered_and_visible(failure_report, tmp_path: Path) -> None:
    """A run with one crashed group (96 of 96 trials SIGSEGV) and healthy groups: the red
    banner is drawn at the top of index.html and on the crashed group's card, visible and not
    covered; no healthy card has one; the expected-failure group's note is not red."""
    out, _ = failure_report
    n_charts = (out / "index.html").read_text(encoding="utf-8").count('class="chart"')
    with (
        serve(out) as base_url,
        chromium(tmp_path / "profile", tmp_path / "chromium.log") as ws,
        CDP.connect(ws) as cdp,
    ):
        state = open_page(cdp, base_url + "index.html", n_charts=n_charts)
        assert state == {"charts": n_charts, "drawn": n_charts}, state
        seen = cdp.evaluate(BANNER_JS)
        # The banner as laid out: screenshot of the first screen, then the whole page.
        first = cdp.send("Page.captureScreenshot", {"format": "png"}, timeout=30)
        (tmp_path / "banner.png").write_bytes(base64.b64decode(first["data"]))
        metrics = cdp.send("Page.getLayoutMetrics")
        height = int(metrics["cssContentSize"]["height"])
        cdp.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        whole = cdp.send("Page.captureScreenshot", {"format": "png"}, timeout=30)
        (tmp_path / "index.png").write_bytes(base64.b64decode(whole["data"]))
        cdp.send("Emulation.clearDeviceMetricsOverride")
        problems = problems_in(cdp.events, base_url)
    assert problems == []
    for name in ("banner.png", "index.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")

    top = seen["top"]
    assert top is not None, "no banner at the top of index.html"
    assert top["display"] != "none" and top["visibility"] == "visible"
    assert float(top["opacity"]) == 1.0
    assert top["width"] > 600 and top["height"] > 40
    assert top["background"] == RED and top["color"] == "rgb(255, 255, 255)"
    assert top["onTop"], "something covers the banner"
    # at the top: above the navigation, on the first screen
    assert top["top"] < seen["navTop"] and top["top"] + top["height"] < seen["viewport"]
    assert "Not a measurement of the agent" in top["text"]
    assert "crashy-agent @ 3x" in top["text"] and "SIGSEGV" in top["text"]
    assert "healthy-agent" not in top["text"] and "oracle-agent" not in top["text"]

    cards = {c["id"]: c for c in seen["cards"]}
    crashed = cards["card-crashy-agent__3x"]
    assert crashed["valid"] == "false" and len(crashed["banners"]) == 1
    banner = crashed["banners"][0]
    assert banner["background"] == RED and banner["onTop"]
    assert banner["width"] > 300 and banner["height"] > 10 and banner["visibility"] == "visible"
    assert banner["text"].startswith("Not a measurement of the agent:")
    for healthy in ("card-healthy-agent__3x", "card-oracle-agent__3x", "card-healthy-agent__1x"):
        assert cards[healthy]["valid"] == "true"
        assert cards[healthy]["banners"] == [], healthy
    # the declared failures: a neutral note, not red
    assert (
        cards["card-healthy-agent__1x"]["notes"]
        and RED not in cards["card-healthy-agent__1x"]["notes"]
    )
    assert seen["expected"] is not None and seen["expected"]["background"] != RED
    assert "health.expected_failures" in seen["expected"]["text"]
