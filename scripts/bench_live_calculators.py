"""Time the live calculators page (book/calculators.md) as a phone would run it: headless Chromium
with its CPU slowed ``--throttle`` times (DevTools' Emulation.setCPUThrottlingRate), the built
website served on 127.0.0.1, a fresh browser profile.

Prints, in seconds: the first answer after opening; each later ``memory`` and ``cost`` answer
(the sequence length changed); ``pick serve`` at 100,000 requests a day; a second visit's first
answer (same profile, so whatever the page cached, its service worker installed first); and,
while Python computed, the longest time the page's own thread was held (the longest gap between
ticks asked for every 20 ms): the page cannot scroll or take a key press meanwhile.

    python scripts/bench_live_calculators.py _build/strict/_build/html [--throttle 4] [--json out.json]

A benchmark, not a test: its figures depend on the machine (say how busy it was). Chromium's
CPU throttling slows the page's own thread only: a Web Worker runs at full speed (DevTools answers
"Operation is only supported for pages, not workers"), so once Python runs in a worker the
throttled figures understate a phone; compare ``--throttle 1`` runs of both pages as well.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "site"))
import sitecheck  # noqa: E402

PAGE = "book/calculators.html"

WAIT_FIRST_JS = """
(async () => {
  const deadline = Date.now() + %d;
  while (!(window.liveCalculators && window.liveCalculators.firstAnswerMs)) {
    if ((window.liveCalculators && window.liveCalculators.state === "error") || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const api = window.liveCalculators || {};
  return {firstAnswerMs: api.firstAnswerMs || null, pythonReadyMs: api.pythonReadyMs || null,
          workerTimings: api.workerTimings || null, state: api.state, error: api.error || null};
})()
"""
# Change the form, then wait until the named answer's text changed (the time of that change) and
# the page is idle again.
CHANGE_JS = """
(async ([values, watch]) => {
  const box = document.querySelector(".live-calculators");
  const form = box.querySelector("form");
  await window.liveCalculators.pending;
  const output = box.querySelector(`[data-command="${watch}"] .live-output`);
  const before = output.textContent;
  const started = performance.now();
  const changed = new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      if (output.textContent !== before) { observer.disconnect(); resolve(performance.now()); }
    });
    observer.observe(output, {childList: true, characterData: true, subtree: true});
  });
  // the page's own thread: the longest gap between ticks asked for every 20 ms
  let last = performance.now(), longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 20);
  for (const [name, value] of Object.entries(values)) {
    form.elements[name].value = value;
    form.elements[name].dispatchEvent(new Event("change", {bubbles: true}));
  }
  const at = await Promise.race([changed, new Promise((r) => setTimeout(() => r(null), 120000))]);
  await window.liveCalculators.pending;
  clearInterval(ticker);
  longest = Math.max(longest, performance.now() - last);  // a thread held to the end: no tick came after
  return {seconds: at === null ? null : (at - started) / 1000, longestFreezeMs: Math.round(longest)};
})(%s)
"""


KEPT_JS = """
(async () => {
  if (!("serviceWorker" in navigator) || !window.liveCalculators.serviceWorker) return false;
  const deadline = Date.now() + 120000;
  while (Date.now() < deadline && !(await navigator.serviceWorker.getRegistration())?.active) {
    await new Promise((r) => setTimeout(r, 100));
  }
  return Boolean((await navigator.serviceWorker.getRegistration())?.active);
})()
"""


def open_page(browser, tab, url: str, throttle: float, timeout_s: float) -> dict:
    browser.call("Emulation.setCPUThrottlingRate", {"rate": throttle}, session_id=tab)
    browser.events.clear()
    browser.call("Page.navigate", {"url": url}, session_id=tab)
    if not browser.wait_for_event("Page.loadEventFired", tab, timeout_s):
        raise RuntimeError("the page did not load")
    return sitecheck._evaluate(browser, tab, WAIT_FIRST_JS % (timeout_s * 1000), timeout_s + 10)


def parts(opened: dict) -> dict | None:
    """Where a first answer's time went, in seconds: Pyodide started in the worker (its files
    fetched and its runtime up), the course imported there, Python ready in the page, the answer."""
    timings = opened.get("workerTimings")
    if not timings or not opened.get("pythonReadyMs"):
        return None
    return {
        "pyodide_s": round((timings["pyodideMs"] - timings["startedMs"]) / 1000, 2),
        "import_s": round((timings["readyMs"] - timings["pyodideMs"]) / 1000, 2),
        "python_ready_in_page_s": round(opened["pythonReadyMs"] / 1000, 2),
        "first_answer_s": round(opened["firstAnswerMs"] / 1000, 2) if opened.get("firstAnswerMs") else None,
    }


def change(browser, tab, values: dict, watch: str) -> dict:
    return sitecheck._evaluate(browser, tab, CHANGE_JS % json.dumps([values, watch]), 150)


def run(html: Path, throttle: float, timeout_s: float = 180) -> dict:
    executable = sitecheck.find_chromium()
    if executable is None:
        raise SystemExit("no Chromium found (set CHROMIUM=)")
    results = {"throttle": throttle}
    with tempfile.TemporaryDirectory(prefix="bench-live-") as profile, sitecheck.serve(html) as base:
        browser = sitecheck.Browser(executable, Path(profile))
        browser.start()
        try:
            tab = browser.new_page()
            url = sitecheck.page_url(base, PAGE)
            first = open_page(browser, tab, url, throttle, timeout_s)
            results["first_answer_s"] = first["firstAnswerMs"] and first["firstAnswerMs"] / 1000
            results["first_visit_parts"] = parts(first)
            if first["state"] == "error":
                raise RuntimeError(f"the page failed: {first['error']}")
            results["memory_s"] = [change(browser, tab, {"seq_len": n}, "memory") for n in ("1024", "2048")]
            results["cost_s"] = [change(browser, tab, {"tokens": t}, "cost") for t in ("2e8", "5e7")]
            results["pick_serve_100k_s"] = change(
                browser, tab, {"method": "inference", "requests_per_day": "100000"}, "pick"
            )
            # a later visit: the page's service worker (if it has one) done installing first
            results["kept_by_service_worker"] = sitecheck._evaluate(browser, tab, KEPT_JS, 150)
            browser.call("Page.navigate", {"url": "about:blank"}, session_id=tab)
            time.sleep(1)
            second = open_page(browser, tab, url, throttle, timeout_s)
            results["second_visit_first_answer_s"] = (
                second["firstAnswerMs"] and second["firstAnswerMs"] / 1000
            )
            results["second_visit_parts"] = parts(second)
        finally:
            browser.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("html", type=Path, help="the built website's folder (holds book/calculators.html)")
    parser.add_argument("--throttle", type=float, default=4.0, help="CPU slow-down factor (default 4)")
    parser.add_argument("--repeat", type=int, default=1, help="runs, each with a fresh profile")
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args(argv)
    runs = [run(args.html.resolve(), args.throttle) for _ in range(args.repeat)]
    for result in runs:
        print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
