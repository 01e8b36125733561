"""Open a page in headless Chromium and collect console errors over the DevTools protocol."""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

FLAGS = [
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
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]


@dataclass
class View:
    """What the page looks like at one viewport width."""

    width: int
    scroll_width: int  # of the whole page: > width means a horizontal scroll bar
    headline_overflow: list[str]  # elements of #headline that reach past the viewport
    headline_text: str
    figures: int  # headline figures loaded (img.headline-fig with pixels)
    screenshot: bytes  # PNG of the first screen
    #: every element of the page, all <details> opened, that reaches past the viewport (a table cut
    #: at the right edge, or one that needs a horizontal scroll inside its box)
    overflow: list[str] = field(default_factory=list)
    #: per plot image (all <details> opened): (alt, rendered width / intrinsic width, the image's
    #: src): a plot's text renders at its font size times this scale
    plots: list[tuple[str, float, str]] = field(default_factory=list)


@dataclass
class PageResult:
    errors: list[str] = field(default_factory=list)
    images: int = 0
    images_loaded: int = 0
    title: str = ""
    text: str = ""
    views: list[View] = field(default_factory=list)


#: viewport heights of the screenshots per width (a laptop's first screen, a phone's)
HEIGHTS = {1280: 800, 390: 844}
_VIEW_JS = """JSON.stringify((() => {
  const w = window.innerWidth, h = document.getElementById('headline');
  const over = h ? Array.from(h.querySelectorAll('*')).filter(e => {
      const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > w + 1 || r.left < -1); })
    .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ': '
              + (e.innerText || e.alt || '').slice(0, 60)) : ['no #headline'];
  const figs = Array.from(document.querySelectorAll('img.headline-fig'))
    .filter(i => i.complete && i.naturalWidth > 0).length;
  return {scroll: document.documentElement.scrollWidth, over: over,
          text: h ? h.innerText : '', figs: figs};
})())"""


#: every <details> opened, then what reaches past the viewport and how each plot is scaled; the
#: details are closed again afterwards (the next width starts from the page as it loaded)
_ALL_JS = """JSON.stringify((() => {
  const w = window.innerWidth, shut = Array.from(document.querySelectorAll('details')).filter(d => !d.open);
  shut.forEach(d => { d.open = true; });
  const over = Array.from(document.body.querySelectorAll('*')).filter(e => {
      const r = e.getBoundingClientRect(); return r.width > 0 && (r.right > w + 1 || r.left < -1); })
    .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '')
              + ': ' + (e.innerText || e.alt || '').replace(/\\s+/g, ' ').slice(0, 60));
  const plots = Array.from(document.querySelectorAll('img.plot')).filter(i => i.naturalWidth > 0)
    .map(i => [i.alt, i.getBoundingClientRect().width / i.naturalWidth, i.src]);
  shut.forEach(d => { d.open = false; });
  return {over: over, plots: plots};
})())"""


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("chromium not found: run `make install` (scripts/apt-packages.txt lists it)")


class _Cdp:
    def __init__(self, url: str) -> None:
        self.ws = connect(url, max_size=None, open_timeout=20)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, name: str, timeout: float = 30.0) -> dict[str, Any]:
        for ev in self.events:
            if ev.get("method") == name:
                return ev
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            self.events.append(msg)
            if msg.get("method") == name:
                return msg


def _errors(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for ev in events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Runtime.exceptionThrown":
            out.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append(f"console.{p['type']}: {[a.get('value') for a in p.get('args', [])]}")
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        elif m == "Network.loadingFailed":
            out.append(f"load failed: {p.get('errorText')}")
    return out


#: how long Chromium may take to print its DevTools address, each of two tries: beside three
#: lanes of `make test` on 2 cores one start printed nothing within 60 s (2026-11-30 19:45 clean
#: clone) and the same test passed alone; a start that hangs is ended and tried once more
START_S = 90.0


def _launch() -> tuple[subprocess.Popen, str, str]:
    """Chromium on a fresh profile: the process, its DevTools address and the profile's directory
    (the caller removes it); both ended and removed when no address comes within START_S."""
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    proc = subprocess.Popen(
        [chromium_binary(), *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        # its singleton socket's directory (org.chromium.Chromium.*, made in TMPDIR and left
        # there when the browser is ended) inside the profile, which the caller removes
        env=dict(os.environ, TMPDIR=profile),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        return proc, _devtools_url(proc, START_S), profile
    except BaseException:
        _stop(proc)
        shutil.rmtree(profile, ignore_errors=True)
        raise


def _start() -> tuple[subprocess.Popen, str, str]:
    """:func:`_launch`, and once more when the first Chromium prints no DevTools address."""
    try:
        return _launch()
    except TimeoutError:
        return _launch()


def open_page(html: Path, timeout: float = 60.0, widths: tuple[int, ...] = ()) -> PageResult:
    """Load ``html`` (file://) and return console errors and the state of its images; for each
    of ``widths`` also the page at that viewport width (overflow, headline, a screenshot)."""
    proc, ws_url, profile = _start()
    try:
        threading.Thread(target=_drain, args=(proc,), daemon=True).start()
        target = _page_target(ws_url, timeout)
        cdp = _Cdp(target)
        for domain in ("Runtime", "Log", "Page", "Network"):
            cdp.call(f"{domain}.enable")
        cdp.call("Page.navigate", url=html.resolve().as_uri())
        cdp.wait_event("Page.loadEventFired", timeout)
        expr = (
            "JSON.stringify({n: document.images.length, ok: Array.from(document.images).filter("
            "i => i.complete && i.naturalWidth > 0).length, title: document.title, "
            "text: document.body.innerText})"
        )
        res = cdp.call("Runtime.evaluate", expression=expr, returnByValue=True)
        info = json.loads(res["result"]["value"])
        views = [_view(cdp, w) for w in widths]
        time.sleep(0.3)
        cdp.call("Runtime.evaluate", expression="1")  # drain late events
        cdp.ws.close()
        return PageResult(_errors(cdp.events), info["n"], info["ok"], info["title"], info["text"], views)
    finally:
        _stop(proc)
        shutil.rmtree(profile, ignore_errors=True)


def _view(cdp: _Cdp, width: int) -> View:
    """The page laid out at ``width`` CSS pixels (a phone's is a mobile viewport)."""
    height = HEIGHTS.get(width, 800)
    cdp.call(
        "Emulation.setDeviceMetricsOverride",
        width=width,
        height=height,
        deviceScaleFactor=1,
        mobile=width < 600,
    )
    cdp.call("Runtime.evaluate", expression="window.scrollTo(0, 0)")
    time.sleep(0.3)
    res = cdp.call("Runtime.evaluate", expression=_VIEW_JS, returnByValue=True)
    got = json.loads(res["result"]["value"])
    shot = cdp.call("Page.captureScreenshot", format="png")
    every = json.loads(
        cdp.call("Runtime.evaluate", expression=_ALL_JS, returnByValue=True)["result"]["value"]
    )
    return View(
        width,
        got["scroll"],
        got["over"],
        got["text"],
        got["figs"],
        base64.b64decode(shot["data"]),
        every["over"],
        [(alt, float(scale), src) for alt, scale, src in every["plots"]],
    )


def _stop(proc: subprocess.Popen) -> None:
    """End the browser we started and its helper processes (its own process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            continue


def _drain(proc: subprocess.Popen) -> None:
    assert proc.stderr is not None
    for _ in proc.stderr:
        pass


def _devtools_url(proc: subprocess.Popen, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            raise RuntimeError(f"chromium exited with {proc.returncode} before DevTools was ready")
        found = re.search(r"DevTools listening on (ws://\S+)", line)
        if found:
            return found.group(1)
    raise TimeoutError(f"chromium did not print its DevTools address within {timeout:.0f} s")


def _page_target(browser_ws: str, timeout: float) -> str:
    """The websocket URL of the first page target (via the browser endpoint, no HTTP needed)."""
    port = re.search(r":(\d+)/", browser_ws).group(1)
    with connect(browser_ws, max_size=None, open_timeout=timeout) as ws:
        ws.send(json.dumps({"id": 1, "method": "Target.getTargets"}))
        while True:
            msg = json.loads(ws.recv(timeout=timeout))
            if msg.get("id") == 1:
                break
    pages = [t for t in msg["result"]["targetInfos"] if t["type"] == "page"]
    if not pages:
        raise RuntimeError("chromium has no page target")
    return f"ws://127.0.0.1:{port}/devtools/page/{pages[0]['targetId']}"
