"""Open web pages in headless Chromium and list what a reader would see wrong.

A page fails on: a JavaScript exception, a console error, a resource that does not load (the
browser reaches 127.0.0.1 only, so anything fetched from the internet fails too), raw LaTeX in
visible text (math that MathJax did not render), a widget area left empty, an image that does
not load, and an image without alt text.

The browser is driven through the Chrome DevTools protocol over a pipe (--remote-debugging-pipe:
no port, no extra package). Everything here has a deadline, so a hung page cannot hang the test.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import http.server
import json
import os
import re
import select
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

# The flags from the course's environment notes, plus: talk over a pipe, resolve no host but
# 127.0.0.1 (so the test proves the site works offline on any machine), a fixed window.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-pipe",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--hide-scrollbars",
    "--mute-audio",
    "--window-size=1280,900",
)
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
VIEWPORT = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
MAX_SCREENSHOT_HEIGHT = 12_000  # pixels; the top of a very long page is enough to look at
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# Waits until MathJax has typeset the page and every widget area is rendered, or the deadline.
SETTLE_JS = """
(async (timeoutMs) => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const deadline = Date.now() + timeoutMs;
  const left = () => Math.max(0, deadline - Date.now());
  let mathjax = "not used";
  if (document.querySelector('script[src*="mathjax" i], script[src*="tex-mml-chtml"]')) {
    // called after the load event, when a deferred or async script has run if it could load
    const ready = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
    const grace = Date.now() + 3000;
    while (!ready() && Date.now() < Math.min(grace, deadline)) await sleep(50);
    if (ready()) {
      const done = await Promise.race([
        MathJax.startup.promise.then(() => true), sleep(left()).then(() => false),
      ]);
      mathjax = done ? "typeset" : "did not finish in time";
    } else {
      mathjax = "did not load";
    }
  }
  const rendered = (s) => {
    const area = s.previousElementSibling;
    return !!(area && area.classList.contains("widget-subarea") && area.querySelector("*"));
  };
  const views = () => [...document.querySelectorAll('script[type="%s"]')];
  // without widget state on the page nothing can fill a widget area: no need to wait
  const state = document.querySelector('script[type="application/vnd.jupyter.widget-state+json"]');
  while (state && views().some((s) => !rendered(s)) && left() > 0) await sleep(100);
  await Promise.race([document.fonts.ready, sleep(left())]);
  return mathjax;
})(%d)
"""

# What the reader sees: raw LaTeX outside code, empty widget areas, images without alt text.
CHECK_JS = r"""
(() => {
  const SKIP = "code, pre, script, style, textarea, kbd, samp, noscript, template, mjx-container, .MathJax";
  const LATEX = /\\\(|\\\)|\\\[|\\\]|\$\$|\\(?:begin|end)\{|\\(?:frac|sqrt|mathrm|mathbf|text|cdot|times|approx|sum|alpha|beta|left|right)(?![A-Za-z])/;
  const rawLatex = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement || node.parentElement.closest(SKIP)) continue;
    const match = node.nodeValue.match(LATEX);
    if (match) {
      const start = Math.max(0, match.index - 40);
      rawLatex.push(node.nodeValue.slice(start, match.index + 40).replace(/\s+/g, " ").trim());
    }
  }
  const src = (img) => (img.getAttribute("src") || "(no src)").slice(0, 80);
  const images = [...document.querySelectorAll("img")];
  const views = [...document.querySelectorAll('script[type="%s"]')];
  const emptyWidgets = views.filter((s) => {
    const area = s.previousElementSibling;
    return !(area && area.classList.contains("widget-subarea") && area.querySelector("*"));
  });
  return {
    rawLatex,
    imagesWithoutAlt: images.filter((img) => !(img.getAttribute("alt") || "").trim()).map(src),
    brokenImages: images.filter((img) => img.complete && img.naturalWidth === 0).map(src),
    emptyWidgets: emptyWidgets.length,
    widgetViews: views.length,
    mathElements: document.querySelectorAll("mjx-container").length,
    height: Math.ceil(document.documentElement.scrollHeight),
  };
})()
""".replace("%s", WIDGET_VIEW)  # noqa: E501 (the LaTeX regular expression cannot wrap)


@dataclass(frozen=True)
class Problem:
    """One thing wrong on a page: ``kind`` (javascript, console, network, math, raw-latex,
    empty-widget, image-alt, broken-image, load, crash) and a human-readable ``detail``."""

    kind: str
    detail: str

    def __str__(self) -> str:
        return f"[{self.kind}] {self.detail}"


@dataclass(frozen=True)
class PageReport:
    """What opening one page found; ``seconds`` from navigation to the end of the checks."""

    url: str
    problems: tuple[Problem, ...]
    seconds: float
    math_elements: int
    widget_views: int
    screenshot: Path | None


def find_chromium() -> str | None:
    """The browser to use: $CHROMIUM if set, else the first Chromium or Chrome on PATH."""
    named = os.environ.get("CHROMIUM")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    return next((path for path in map(shutil.which, CHROMIUM_NAMES) if path), None)


@contextlib.contextmanager
def serve(directory: Path, overrides: dict[str, bytes] | None = None):
    """Serve ``directory`` over HTTP on 127.0.0.1 (a free port) in a thread; yields the base URL.
    ``overrides``: {path under the base URL: the body served for it instead of the file}."""

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            pass

        def do_GET(self):  # noqa: N802 - the base class's name
            body = (overrides or {}).get(self.path.split("?")[0].lstrip("/"))
            if body is None:
                return super().do_GET()
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(self.path.split("?")[0]))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    handler = functools.partial(QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="site-test-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class BrowserError(RuntimeError):
    """The browser did not answer in time, answered with an error, or went away."""


def _raise_if_crashed(event: dict, session_id: str | None, awaited: str) -> None:
    if event["method"] == "Inspector.targetCrashed" and session_id and event.get("sessionId") == session_id:
        raise BrowserError(
            f"the tab's renderer crashed while waiting for {awaited}: the tab shows a crashed page, and "
            "any other page of the site that the renderer held is gone too"
        )


class Browser:
    """A headless Chromium with a fresh profile in ``profile_dir``, driven over a pipe."""

    def __init__(self, executable: str, profile_dir: Path):
        self.executable = executable
        self.profile_dir = Path(profile_dir)
        self.pid: int | None = None
        self.events: list[dict] = []
        self._next_id = 0
        self._buffer = b""
        self._to_browser = self._from_browser = None

    def start(self, timeout_s: float = 30) -> None:
        """Start the browser in a session of its own, its fds 3 and 4 on the two pipes."""
        command_read, command_write = os.pipe()  # we write commands, Chromium reads its fd 3
        event_read, event_write = os.pipe()  # Chromium writes its fd 4, we read
        # the child's ends must not sit on 3 or 4 before the dup2 (a dup2 onto itself keeps CLOEXEC)
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (command_read, event_write)]
        os.close(command_read)
        os.close(event_write)
        command_read, event_write = moved
        log = os.open(self.profile_dir / "chromium.log", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        argv = [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile_dir}", "about:blank"]
        # its crash reports (Crash Reports/ under $XDG_CONFIG_HOME/chromium) stay in the profile too
        environment = dict(os.environ, XDG_CONFIG_HOME=str(self.profile_dir / "config"))
        try:
            self.pid = os.posix_spawn(
                self.executable,
                argv,
                environment,
                setsid=True,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, log, 1),
                    (os.POSIX_SPAWN_DUP2, log, 2),
                    (os.POSIX_SPAWN_DUP2, command_read, 3),
                    (os.POSIX_SPAWN_DUP2, event_write, 4),
                ],
            )
        except OSError:
            os.close(command_write)
            os.close(event_read)
            raise
        finally:
            for fd in (log, command_read, event_write):
                os.close(fd)
        self._to_browser, self._from_browser = command_write, event_read
        self.call("Browser.getVersion", timeout_s=timeout_s)

    def wait(self, timeout_s: float) -> bool:
        """Whether the browser process has exited (and was reaped) within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.profile_dir / "chromium.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def _send(self, method: str, params: dict | None, session_id: str | None) -> int:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session_id:
            message["sessionId"] = session_id
        data = json.dumps(message).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self._to_browser, data) :]
        except OSError as error:
            raise BrowserError(f"the browser went away ({error}): {self.log_tail()}") from None
        return self._next_id

    def _receive(self, deadline: float) -> dict | None:
        """The next message, or None at the deadline."""
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                return None
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser closed its pipe: {self.log_tail()}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(
        self, method: str, params: dict | None = None, session_id: str | None = None, timeout_s: float = 30
    ) -> dict:
        """Send one command and return its result; events read meanwhile go to ``events``."""
        message_id = self._send(method, params, session_id)
        deadline = time.monotonic() + timeout_s
        while True:
            message = self._receive(deadline)
            if message is None:
                raise BrowserError(f"{method} got no answer in {timeout_s} s")
            if message.get("id") == message_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self._keep_event(message, session_id, method)

    def wait_for_event(self, method: str, session_id: str, timeout_s: float) -> dict | None:
        """The first event ``method`` of the session (already received or arriving in time)."""
        deadline = time.monotonic() + timeout_s
        for event in self.events:
            if event["method"] == method and event.get("sessionId") == session_id:
                return event
            _raise_if_crashed(event, session_id, method)
        while True:
            message = self._receive(deadline)
            if message is None:
                return None
            if "method" in message:
                self._keep_event(message, session_id, method)
                if message["method"] == method and message.get("sessionId") == session_id:
                    return message

    def _keep_event(self, event: dict, session_id: str | None, awaited: str) -> None:
        """Keep ``event`` in ``events``; raises when it says that the renderer of the tab
        ``session_id`` crashed, as nothing awaited there would come."""
        self.events.append(event)
        _raise_if_crashed(event, session_id, awaited)

    def drain(self, seconds: float) -> None:
        """Collect the events that arrive within ``seconds``."""
        deadline = time.monotonic() + seconds
        while (message := self._receive(deadline)) is not None:
            if "method" in message:
                self.events.append(message)

    def new_page(self) -> str:
        """Open a tab with the page domains enabled (Inspector: it tells when the tab's renderer
        crashes); returns its session id."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Inspector"):
            self.call(f"{domain}.enable", session_id=session)
        self.call("Emulation.setDeviceMetricsOverride", VIEWPORT, session_id=session)
        return session

    def process_ids(self) -> list[int]:
        """Processes still running from this browser: its session, or its profile on the command line."""
        if self.pid is None:
            return []
        marker = f"--user-data-dir={self.profile_dir}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                session = int(stat.rsplit(")", 1)[1].split()[3])
                cmdline = (entry / "cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            if session == self.pid or marker in cmdline:
                found.append(int(entry.name))
        return found

    def close(self, timeout_s: float = 10) -> list[int]:
        """Ask the browser to quit; after ``timeout_s`` stop what is left of the processes it
        started. Returns the ids that had to be stopped that way (none when it quits cleanly)."""
        if self.pid is None:
            return []
        forced = []
        with contextlib.suppress(BrowserError, OSError):
            self.call("Browser.close", timeout_s=5)
        if not self.wait(timeout_s):
            forced.append(self.pid)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)  # the process group this class started
            self.wait(timeout_s)
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        # helpers that outlived the browser (they share its session): wait briefly, then stop them
        deadline = time.monotonic() + timeout_s
        while self.process_ids() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in self.process_ids():
            forced.append(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return forced


def _event_problems(events: list[dict], session_id: str) -> list[Problem]:
    problems = []
    for event in events:
        if event.get("sessionId") != session_id:
            continue
        params = event.get("params", {})
        if event["method"] == "Inspector.targetCrashed":
            problems.append(Problem("crash", "the tab's renderer crashed"))
        elif event["method"] == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = (details.get("exception") or {}).get("description") or details.get("text", "")
            where = (
                f" ({details.get('url', '')}:{details.get('lineNumber', 0) + 1})"
                if details.get("url")
                else ""
            )
            problems.append(
                Problem("javascript", text.splitlines()[0] + where if text else "exception" + where)
            )
        elif event["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            problems.append(Problem("console", text[:300]))
        elif event["method"] == "Log.entryAdded" and params["entry"].get("level") == "error":
            entry = params["entry"]
            if entry.get("url", "").endswith("/favicon.ico"):
                continue  # the browser asks every site for one on its own; no page links it
            url = f" {entry['url']}" if entry.get("url") else ""
            problems.append(
                Problem(
                    "network" if entry.get("source") == "network" else entry.get("source", "log"),
                    f"{entry.get('text', '')}{url}"[:300],
                )
            )
    return list(dict.fromkeys(problems))  # the same message twice is one problem


_INLINE_MATH = re.compile(r'<span class="math[^"]*">\\\((.*?)\\\)</span>', re.DOTALL)
_PROSE = re.compile(r"[A-Za-z]{3,}\s+[A-Za-z]{3,}\s+[A-Za-z]{3,}")


def prose_in_math(html: str) -> list[str]:
    """Inline math whose TeX reads like prose: two $ amounts in a sentence that MyST's dollarmath
    took for math ("about $2 per hour ... $8"). MathJax renders it without error, in italics,
    so only the source shows it. Text in \\text{...} and TeX commands are not counted."""
    found = []
    for tex in _INLINE_MATH.findall(html):
        bare = re.sub(r"\\[A-Za-z]+(\{[^}]*\})?", " ", tex)
        if _PROSE.search(bare):
            found.append(" ".join(tex.split())[:80])
    return found


def _evaluate(browser: Browser, session_id: str, expression: str, timeout_s: float):
    """The value of a JavaScript expression in the page (awaited if it is a promise)."""
    answer = browser.call(
        "Runtime.evaluate",
        {"expression": expression, "awaitPromise": True, "returnByValue": True},
        session_id=session_id,
        timeout_s=timeout_s,
    )
    if "exceptionDetails" in answer:
        details = answer["exceptionDetails"]
        text = (details.get("exception") or {}).get("description") or details.get("text", "")
        raise BrowserError(f"the page checks could not run (did the page navigate away?): {text}")
    return answer["result"].get("value")


def redirect_target(html: str) -> str | None:
    """Where a redirect-only page (``<meta http-equiv="refresh" ... url=X>``) sends the reader."""
    match = re.search(r'<meta\s+http-equiv="refresh"\s+content="\d+;\s*url=([^"]+)"', html, re.IGNORECASE)
    return match.group(1) if match else None


def check_page(
    browser: Browser, session_id: str, url: str, screenshot: Path | None = None, timeout_s: float = 60
) -> PageReport:
    """Open ``url`` in the tab ``session_id``, wait for math and widgets, and list the problems."""
    start = time.monotonic()
    deadline = start + timeout_s
    left = lambda: max(1.0, deadline - time.monotonic())  # noqa: E731
    browser.events.clear()
    problems: list[Problem] = []
    navigation = browser.call("Page.navigate", {"url": url}, session_id=session_id, timeout_s=left())
    if navigation.get("errorText"):
        problems.append(Problem("load", f"{url}: {navigation['errorText']}"))
        return PageReport(url, tuple(problems), time.monotonic() - start, 0, 0, None)
    if browser.wait_for_event("Page.loadEventFired", session_id, left()) is None:
        problems.append(Problem("load", f"the page did not finish loading in {timeout_s} s"))
    settle_ms = int(min(30.0, left()) * 1000)
    mathjax = _evaluate(browser, session_id, SETTLE_JS % (WIDGET_VIEW, settle_ms), left() + 5)
    found = _evaluate(browser, session_id, CHECK_JS, left())
    browser.drain(0.3)  # errors logged while the checks ran
    problems += _event_problems(browser.events, session_id)
    if mathjax not in ("typeset", "not used"):
        problems.append(Problem("math", f"MathJax {mathjax}"))
    problems += [Problem("raw-latex", f"visible LaTeX: ...{text}...") for text in found["rawLatex"][:5]]
    if len(found["rawLatex"]) > 5:
        problems.append(Problem("raw-latex", f"and {len(found['rawLatex']) - 5} more places"))
    if found["emptyWidgets"]:
        problems.append(
            Problem(
                "empty-widget", f"{found['emptyWidgets']} of {found['widgetViews']} widget areas stayed empty"
            )
        )
    problems += [Problem("image-alt", f"image without alt text: {src}") for src in found["imagesWithoutAlt"]]
    problems += [Problem("broken-image", f"image did not load: {src}") for src in found["brokenImages"]]
    if screenshot is not None:
        # a viewport as tall as the page (up to a cap), so the whole page is laid out as shown
        height = min(max(found["height"], VIEWPORT["height"]), MAX_SCREENSHOT_HEIGHT)
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            dict(VIEWPORT, height=height),
            session_id=session_id,
            timeout_s=left(),
        )
        _evaluate(
            browser, session_id, "new Promise((r) => requestAnimationFrame(() => setTimeout(r, 100)))", left()
        )
        shot = browser.call(
            "Page.captureScreenshot", {"format": "png"}, session_id=session_id, timeout_s=left() + 10
        )
        browser.call("Emulation.setDeviceMetricsOverride", VIEWPORT, session_id=session_id, timeout_s=left())
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
    return PageReport(
        url,
        tuple(problems),
        time.monotonic() - start,
        found["mathElements"],
        found["widgetViews"],
        screenshot,
    )


def site_pages(html_dir: Path) -> list[str]:
    """Every HTML page of a built Sphinx site, relative to ``html_dir``, sorted."""
    skip = {"_static", "_sources", "_images", "_downloads", "_sphinx_design_static"}
    return sorted(
        path.relative_to(html_dir).as_posix()
        for path in html_dir.rglob("*.html")
        if not skip & set(path.relative_to(html_dir).parts[:-1])
    )


def page_url(base_url: str, page: str) -> str:
    return base_url + quote(page)
