"""Time the live calculators page (book/calculators.md) as a phone would run it: headless Chromium
on the built website served from 127.0.0.1, a fresh browser profile, its CPU slowed one of two ways.

- ``--cgroup-cpu-fraction 0.5`` (Linux, as root, the cgroup v1 CPU controller mounted at
  /sys/fs/cgroup/cpu): Chromium and every process it starts run in a cgroup of their own whose
  quota is that share of one CPU (cpu.cfs_quota_us / cpu.cfs_period_us), so the page, its Web
  Worker (where Python runs), the compiler threads and the browser all share it. The cgroup is
  made for the run and removed after it, on error too (any process left in it is moved back to
  the parent first). The slow-down it gave
  is measured, not assumed: the same Python workload in the worker (``lab-utils memory`` run 25
  times, the median) is timed with the quota and, in a second browser, without it (``--slowdown``).
  Measured on the course's 2-core VM (2026-12-04): half of one CPU slowed it 3.3x (load 0.7-1.9),
  about the 4x of a mid-range phone; a quarter 5.2-10.1x (load 1.2-3.7), not 4x, as the quota is
  shared by every thread of the browser (V8's compilers and collector, the page) and an unquoted
  browser also gets the second core.
- ``--throttle 4`` (DevTools' Emulation.setCPUThrottlingRate): slows the page's own thread only.
  Python runs in a Web Worker, which it does not slow: Chromium 156 answers "Operation is only
  supported for pages, not workers" when the worker's own DevTools session asks (Target.setAutoAttach,
  flatten), and the page's rate leaves the worker's timings unchanged (measured here). Kept to
  time the page's thread; the cgroup is what throttles Python.

Prints, in seconds: the first answer after opening (and where its time went); each later
``memory`` and ``cost`` answer (the sequence length, then the training tokens changed); ``pick
serve`` at 100,000 requests a day; ``latency`` for the form's serving job; a second visit's first
answer (same profile, once the page's service worker has installed and the reader has read the
last answer for ``--read-s`` seconds: Chromium keeps Python's compiled runtime for the next visit
once no new optimised code came for 2 s, V8's ``--wasm-caching-timeout-ms`` in Chromium 156, which
a visit left at once may not give it); and, while Python computed, the longest time the page's
own thread was held (the longest gap between ticks asked for every 20 ms): the page cannot scroll
or take a key press meanwhile. It also prints the CPU seconds
each of the browser's threads used from each visit's opening to its first answer (``/proc``,
summed by thread name): where a slow CPU's time goes. The page is opened once the browser has
settled (:func:`settle`), as a reader's browser has before a link is followed.

    python scripts/bench_live_calculators.py _build/strict/_build/html --cgroup-cpu-fraction 0.5 \
        [--slowdown] [--json out.json]

A benchmark, not a test: its figures depend on the machine (it prints the load average, from
/proc/loadavg, before and after each run: say how busy the machine was).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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
          workerTimings: api.workerTimings || null, state: api.state, error: api.error || null,
          pageOriginMs: api.pageOriginMs || null,
          startScriptMs: (window.liveCalculatorsStart || {}).startedMs || null,
          navigation: (({responseEnd, domInteractive, domContentLoadedEventEnd}) =>
            ({responseEnd, domInteractive, domContentLoadedEventEnd}))(
            performance.getEntriesByType("navigation")[0])};
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


# The known workload timed in the worker: `lab-utils memory` run n times (the worker's own clock
# around each run), its median in milliseconds. Replies carry ids the page never asks with.
WORKER_WORKLOAD_JS = """
(async (n) => {
  const worker = window.liveCalculators.worker, times = [];
  for (let i = 0; i < n; i++) {
    const id = 1e9 + i;
    const reply = new Promise((resolve) => {
      const on = (event) => {
        if (event.data.id === id) { worker.removeEventListener("message", on); resolve(event.data); }
      };
      worker.addEventListener("message", on);
    });
    const argv = ["memory", "--model", "Llama-3.1-8B", "--method", "lora", "--seq-len", String(1000 + i)];
    worker.postMessage({id, argv});
    times.push((await reply).ms);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(n / 2)];
})(%d)
"""
WORKLOAD_RUNS = 25
CGROUP_ROOT = Path("/sys/fs/cgroup/cpu")
CGROUP_PERIOD_US = 10_000  # a short period: the quota is spread finely (a 100 ms one gives bursts)


@contextlib.contextmanager
def cpu_cgroup(fraction: float):
    """A cgroup v1 CPU group holding ``fraction`` of one CPU (its quota per period); yields its
    folder. Removed afterwards, on error too: any process still in it is moved to the parent
    first (a cgroup with processes cannot be removed)."""
    if not (CGROUP_ROOT / "cpu.cfs_quota_us").is_file():
        raise SystemExit(f"--cgroup-cpu-fraction needs the cgroup v1 CPU controller at {CGROUP_ROOT}")
    if not 0.01 <= fraction <= 64:
        raise SystemExit(f"--cgroup-cpu-fraction: a share of one CPU from 0.01 to 64, not {fraction}")
    group = CGROUP_ROOT / f"bench-live-calculators-{os.getpid()}"
    group.mkdir()
    try:
        (group / "cpu.cfs_period_us").write_text(str(CGROUP_PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(round(fraction * CGROUP_PERIOD_US)))
        yield group
    finally:
        for _ in range(50):
            left = (group / "cgroup.procs").read_text().split()
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    (CGROUP_ROOT / "cgroup.procs").write_text(pid)
            time.sleep(0.1)
        group.rmdir()


def chromium_in(group: Path | None, folder: Path) -> str:
    """The Chromium to start: itself, or (``group`` given) a script that enters the cgroup and then
    becomes Chromium, so the browser and every process it starts run in it from their start."""
    executable = sitecheck.find_chromium()
    if executable is None:
        raise SystemExit("no Chromium found (set CHROMIUM=)")
    if group is None:
        return executable
    script = folder / "chromium-in-cgroup"
    script.write_text(f'#!/bin/sh\necho $$ > {group / "cgroup.procs"} || exit 1\nexec {executable} "$@"\n')
    script.chmod(0o700)
    return str(script)


def cpu_by_thread(browser) -> dict[str, float]:
    """CPU seconds used so far by the browser's threads (``/proc``), summed by the thread's name
    and its process's type (``renderer/chromium`` is a renderer's main thread, ``renderer/
    DedicatedWorker`` the worker where Python runs, ``browser/...``), most first."""
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    used: dict[str, float] = {}
    for pid in browser.process_ids():
        with contextlib.suppress(OSError):  # a process or thread that ended meanwhile
            # Chromium rewrites its processes' titles: the arguments joined by spaces, not NULs
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").split()
            kind = next((a[7:].decode() for a in command if a.startswith(b"--type=")), "browser")
            for task in Path(f"/proc/{pid}/task").iterdir():
                stat = (task / "stat").read_text()
                name = stat[stat.index("(") + 1 : stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2 :].split()
                key = f"{kind}/{name}"
                used[key] = used.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / ticks_per_s
    return dict(sorted(((k, round(v, 2)) for k, v in used.items()), key=lambda kv: -kv[1]))


def settle(browser, timeout_s: float = 60) -> float:
    """Wait until the browser has started, as a reader's browser has before a link is opened: its
    own pages (headless Chromium 156 loads the omnibox's in a renderer of its own, most of a CPU
    second) done, under 5% of one CPU used over half a second. Returns the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        before = sum(cpu_by_thread(browser).values())
        time.sleep(0.5)
        if sum(cpu_by_thread(browser).values()) - before < 0.025:
            break
    return round(time.monotonic() - started, 1)


def used_since(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds by thread between two :func:`cpu_by_thread` readings, those of 0.05 s or more."""
    used = {key: round(seconds - before.get(key, 0.0), 2) for key, seconds in after.items()}
    return {key: seconds for key, seconds in used.items() if seconds >= 0.05}


def load_average() -> str:
    """The 1, 5 and 15-minute load averages (as ``uptime`` prints them)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def open_page(browser, tab, url: str, throttle: float, timeout_s: float) -> dict:
    browser.call("Emulation.setCPUThrottlingRate", {"rate": throttle}, session_id=tab)
    browser.events.clear()
    browser.call("Page.navigate", {"url": url}, session_id=tab)
    if not browser.wait_for_event("Page.loadEventFired", tab, timeout_s):
        raise RuntimeError("the page did not load")
    return sitecheck._evaluate(browser, tab, WAIT_FIRST_JS % (timeout_s * 1000), timeout_s + 10)


def parts(opened: dict) -> dict | None:
    """Where a first answer's time went, in seconds from the page's opening: each mark the worker
    reported (its ``*Ms`` timings: started, packages.json read, Pyodide's script imported, its
    runtime up, the wheels unpacked, the course imported: ready), Python ready in the page, the
    first answer. The worker's marks are on the page's clock when the page reports its origin;
    before them, the page's own: its HTML received, parsed, loaded, and the worker created."""
    timings = opened.get("workerTimings")
    if not timings or not opened.get("pythonReadyMs"):
        return None
    # the worker's marks on the page's clock (a worker's performance.now() counts from its own start)
    offset = (
        timings["originMs"] - opened["pageOriginMs"]
        if opened.get("pageOriginMs") and "originMs" in timings
        else 0
    )
    marks = {
        "worker_" + key[:-2] + "_s": round((value + offset) / 1000, 2)
        for key, value in timings.items()
        if key.endswith("Ms") and key != "originMs" and isinstance(value, (int, float))
    }
    page = {
        "page_" + key + "_s": round(value / 1000, 2)
        for key, value in (opened.get("navigation") or {}).items()
        if isinstance(value, (int, float))
    }
    if opened.get("startScriptMs"):
        page["page_worker_created_s"] = round(opened["startScriptMs"] / 1000, 2)
    return {
        **page,
        **marks,
        "python_ready_in_page_s": round(opened["pythonReadyMs"] / 1000, 2),
        "first_answer_s": round(opened["firstAnswerMs"] / 1000, 2) if opened.get("firstAnswerMs") else None,
        "restored": bool(timings.get("restored")),
    }


def change(browser, tab, values: dict, watch: str) -> dict:
    return sitecheck._evaluate(browser, tab, CHANGE_JS % json.dumps([values, watch]), 300)


def has_latency_row(browser, tab) -> bool:
    return sitecheck._evaluate(
        browser, tab, "Boolean(document.querySelector('[data-command=\"latency\"]'))", 10
    )


def run(html: Path, throttle: float, fraction: float | None, read_s: float, timeout_s: float = 300) -> dict:
    results = {
        "throttle": throttle,
        "cgroup_cpu_fraction": fraction,
        "read_s": read_s,
        "load_average_before": load_average(),
    }
    with contextlib.ExitStack() as stack:
        group = stack.enter_context(cpu_cgroup(fraction)) if fraction else None
        profile = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-live-"))
        base = stack.enter_context(sitecheck.serve(html))
        browser = sitecheck.Browser(chromium_in(group, Path(profile)), Path(profile) / "profile")
        (Path(profile) / "profile").mkdir()
        stack.callback(browser.close)
        browser.start()
        if group is not None:  # every process the browser started is in the cgroup
            inside = set((group / "cgroup.procs").read_text().split())
            results["processes_outside_cgroup"] = [p for p in browser.process_ids() if str(p) not in inside]
        tab = browser.new_page()
        results["browser_settled_after_s"] = settle(browser)
        url = sitecheck.page_url(base, PAGE)
        before = cpu_by_thread(browser)
        first = open_page(browser, tab, url, throttle, timeout_s)
        results["first_answer_s"] = first["firstAnswerMs"] and first["firstAnswerMs"] / 1000
        results["first_visit_parts"] = parts(first)
        results["first_visit_cpu_s"] = used_since(before, cpu_by_thread(browser))
        if first["state"] == "error":
            raise RuntimeError(f"the page failed: {first['error']}")
        sitecheck._evaluate(browser, tab, "window.liveCalculators.pending", timeout_s)
        results["worker_memory_command_ms"] = sitecheck._evaluate(
            browser, tab, WORKER_WORKLOAD_JS % WORKLOAD_RUNS, timeout_s
        )
        results["memory_s"] = [change(browser, tab, {"seq_len": n}, "memory") for n in ("1024", "2048")]
        results["cost_s"] = [change(browser, tab, {"tokens": t}, "cost") for t in ("2e8", "5e7")]
        results["pick_serve_100k_s"] = change(
            browser, tab, {"method": "inference", "requests_per_day": "100000"}, "pick"
        )
        if has_latency_row(browser, tab):
            results["latency_s"] = change(browser, tab, {"output_len": "150"}, "latency")
        # a later visit: the page's service worker (if it has one) done installing first
        results["kept_by_service_worker"] = sitecheck._evaluate(browser, tab, KEPT_JS, 150)
        time.sleep(read_s)
        browser.call("Page.navigate", {"url": "about:blank"}, session_id=tab)
        time.sleep(1)
        before = cpu_by_thread(browser)
        second = open_page(browser, tab, url, throttle, timeout_s)
        results["second_visit_first_answer_s"] = second["firstAnswerMs"] and second["firstAnswerMs"] / 1000
        results["second_visit_parts"] = parts(second)
        results["second_visit_cpu_s"] = used_since(before, cpu_by_thread(browser))
    results["load_average_after"] = load_average()
    return results


def slowdown(html: Path, fraction: float) -> dict:
    """The cgroup's slow-down of Python in the worker: the workload's median without the quota,
    then with it, each in a fresh browser."""
    medians = {}
    for share in (None, fraction):
        with contextlib.ExitStack() as stack:
            group = stack.enter_context(cpu_cgroup(share)) if share else None
            profile = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-live-")))
            base = stack.enter_context(sitecheck.serve(html))
            (profile / "profile").mkdir()
            browser = sitecheck.Browser(chromium_in(group, profile), profile / "profile")
            stack.callback(browser.close)
            browser.start()
            tab = browser.new_page()
            open_page(browser, tab, sitecheck.page_url(base, PAGE), 1, 300)
            sitecheck._evaluate(browser, tab, "window.liveCalculators.pending", 300)
            medians[share or 1.0] = sitecheck._evaluate(browser, tab, WORKER_WORKLOAD_JS % WORKLOAD_RUNS, 300)
    return {
        "worker_memory_command_ms": {str(k): v for k, v in medians.items()},
        "slowdown": round(medians[fraction] / medians[1.0], 2),
        "load_average": load_average(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("html", type=Path, help="the built website's folder (holds book/calculators.html)")
    parser.add_argument(
        "--cgroup-cpu-fraction",
        type=float,
        help="run Chromium in a cgroup holding this share of one CPU (0.25: about 4x slower; Linux, root)",
    )
    parser.add_argument(
        "--throttle",
        type=float,
        default=1.0,
        help="DevTools' CPU slow-down of the page's thread only (default 1)",
    )
    parser.add_argument(
        "--slowdown", action="store_true", help="also measure the cgroup's slow-down of Python in the worker"
    )
    parser.add_argument(
        "--read-s",
        type=float,
        default=5.0,
        help="seconds the reader stays on the first visit after its last answer (default 5)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs, each with a fresh profile")
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args(argv)
    html = args.html.resolve()
    runs = [run(html, args.throttle, args.cgroup_cpu_fraction, args.read_s) for _ in range(args.repeat)]
    if args.slowdown and args.cgroup_cpu_fraction:
        runs.append(slowdown(html, args.cgroup_cpu_fraction))
    for result in runs:
        print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
