"""The live calculators page (book/calculators.md) in headless Chromium with no network: the form
works while Python loads, then each answer equals what the `lab-utils` command prints for the
same options, for several inputs. The page's download size and its time to the first answer
are written to _build/site-test/live-calculators.json, a screenshot of the answered page beside it."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sitecheck
from site_settings import ARTEFACTS, SITE_HTML, SKIP_REASON

pytestmark = pytest.mark.skipif(not SITE_HTML, reason=SKIP_REASON)

HTML = Path(SITE_HTML).resolve() if SITE_HTML else None
PAGE = "book/calculators.html"
PYTHON_TIMEOUT_S = 180  # loading Pyodide and the course on a busy 2-core machine
# The inputs the reader changes, one answer set each (names of the form's fields).
INPUTS = [
    {},  # the page's first answer, as it opens
    {"method": "inference", "model": "Qwen2.5-7B", "gpu": "RTX 4090", "requests_per_day": "5000"},
    {"method": "qlora", "model": "Llama-3.1-70B", "gpu": "A100 80GB SXM", "seq_len": "2048", "tokens": "5e7"},
    {"method": "full", "model": "Llama-3.2-1B", "gpu": "T4", "seq_len": "1024", "tokens": "2e8"},
    {"method": "inference", "model": "Llama-3.1-70B", "gpu": "L4", "requests_per_day": "100000"},
    {"method": "lora", "model": "Mistral-7B-v0.1", "gpu": "RTX 3090", "seq_len": "8192", "tokens": "1e8"},
]

SET_INPUTS_JS = """
(async (values) => {
  const form = document.querySelector(".live-calculators form");
  for (const [name, value] of Object.entries(values)) {
    form.elements[name].value = value;
    form.elements[name].dispatchEvent(new Event("change", {bubbles: true}));
  }
  await window.liveCalculators.pending;
  return [...document.querySelectorAll(".live-answer")].map((s) => ({
    name: s.dataset.command, argv: JSON.parse(s.dataset.argv || "null"), status: Number(s.dataset.status),
    output: s.querySelector(".live-output").textContent, json: s.dataset.json || null,
    headline: s.querySelector(".live-headline").textContent,
    command: s.querySelector(".live-command").textContent, gpu: form.elements.gpu.value,
  }));
})(%s)
"""
WAIT_READY_JS = """
(async () => {
  const deadline = Date.now() + %d;
  while (!["ready", "error"].includes(window.liveCalculators.state)
         || !window.liveCalculators.firstAnswerMs) {
    if (window.liveCalculators.state === "error" || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const api = window.liveCalculators;
  const resources = performance.getEntriesByType("resource")
    .concat(performance.getEntriesByType("navigation"));
  return {state: api.state, error: api.error, timeline: api.timeline, formReadyMs: api.formReadyMs,
          pythonReadyMs: api.pythonReadyMs, firstAnswerMs: api.firstAnswerMs,
          transferBytes: resources.reduce((sum, r) => sum + (r.transferSize || 0), 0),
          bodyBytes: resources.reduce((sum, r) => sum + (r.encodedBodySize || 0), 0),
          files: resources.length};
})()
""".replace("%d", str(PYTHON_TIMEOUT_S * 1000))


def lab_utils_cli(argv: list[str]) -> subprocess.CompletedProcess:
    """The `lab-utils` command of this environment, run with ``argv``."""
    return subprocess.run(
        [sys.executable, "-m", "lab_utils.cli", *argv], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def opened(browser, tab):
    """The page opened once; what it showed at its load event, and when Python answered."""
    assert (HTML / PAGE).is_file(), f"no {PAGE} in {SITE_HTML}"
    with sitecheck.serve(HTML) as base:
        browser.events.clear()
        started = time.monotonic()
        browser.call("Page.navigate", {"url": sitecheck.page_url(base, PAGE)}, session_id=tab)
        assert browser.wait_for_event("Page.loadEventFired", tab, 60), "the page did not load"
        at_load = sitecheck._evaluate(
            browser,
            tab,
            """(() => {
          const form = document.querySelector(".live-calculators form");
          form.elements.seq_len.value = "1234";  // usable now: the command line follows at once
          form.elements.seq_len.dispatchEvent(new Event("change", {bubbles: true}));
          const memory = document.querySelector('[data-command="memory"] .live-command').textContent;
          form.elements.seq_len.value = form.elements.seq_len.defaultValue;
          form.elements.seq_len.dispatchEvent(new Event("change", {bubbles: true}));
          return {state: window.liveCalculators.state, disabled: [...form.elements].some((e) => e.disabled),
                  status: document.querySelector(".live-status").textContent, memory};
        })()""",
            30,
        )
        ready = sitecheck._evaluate(browser, tab, WAIT_READY_JS, PYTHON_TIMEOUT_S + 10)
        ready["wallSeconds"] = time.monotonic() - started
        browser.call(
            "Emulation.setDeviceMetricsOverride", dict(sitecheck.VIEWPORT, height=2400), session_id=tab
        )
        shot = browser.call("Page.captureScreenshot", {"format": "png"}, session_id=tab, timeout_s=30)
        browser.call("Emulation.setDeviceMetricsOverride", sitecheck.VIEWPORT, session_id=tab)
        ARTEFACTS.mkdir(parents=True, exist_ok=True)  # beside screenshots/, which test_site.py empties
        (ARTEFACTS / "live-calculators-answered.png").write_bytes(base64.b64decode(shot["data"]))
        yield browser, tab, at_load, ready


def test_the_form_works_before_python_and_the_answers_follow(opened):
    browser, tab, at_load, ready = opened
    assert not at_load["disabled"]
    assert "--seq-len 1234" in at_load["memory"], "the command line follows the form before Python loads"
    assert ready["state"] == "ready", f"the calculators did not answer: {ready['error']}"
    states = [entry["state"] for entry in ready["timeline"]]
    assert states[0] == "loading" and "ready" in states, states
    assert ready["formReadyMs"] < ready["pythonReadyMs"] <= ready["firstAnswerMs"]
    problems = sitecheck._event_problems(browser.events, tab)
    assert not problems, "\n".join(map(str, problems))
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    measured = {
        key: ready[key]
        for key in (
            "formReadyMs",
            "pythonReadyMs",
            "firstAnswerMs",
            "transferBytes",
            "bodyBytes",
            "files",
            "wallSeconds",
        )
    }
    (ARTEFACTS / "live-calculators.json").write_text(json.dumps(measured, indent=1) + "\n", encoding="utf-8")
    print(
        f"\nlive calculators: first answer {ready['firstAnswerMs'] / 1e3:.1f} s after navigation, "
        f"{ready['bodyBytes'] / 1e6:.1f} MB in {ready['files']} files"
    )


@pytest.mark.parametrize(
    "values", INPUTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) or "start"
)
def test_each_answer_is_what_the_cli_prints(opened, values):
    browser, tab, _, ready = opened
    assert ready["state"] == "ready", f"the calculators did not answer: {ready['error']}"
    shown = sitecheck._evaluate(browser, tab, SET_INPUTS_JS % json.dumps(values), 120)
    assert [s["name"] for s in shown] == ["memory", "cost", "pick"]
    for section in shown:
        argv = section["argv"]
        for name, value in values.items():
            flag = "--" + name.replace("_", "-")
            if flag in argv:
                assert argv[argv.index(flag) + 1] == value, f"{section['name']} did not take {flag} {value}"
        assert section["command"] == "lab-utils " + " ".join(a if " " not in a else f"'{a}'" for a in argv)
        cli = lab_utils_cli(argv)
        assert section["status"] == cli.returncode, (section["name"], cli.stderr)
        assert section["output"] == (cli.stdout if cli.returncode == 0 else cli.stderr), section["name"]
        if section["name"] == "memory" and cli.returncode == 0:  # the chosen GPU's row of the CLI's table
            gpu = section["gpu"]
            row = next(line for line in cli.stdout.splitlines() if line.startswith(gpu + "  "))
            vendor, usable, verdict = re.split(r"\s{2,}", row[len(gpu) :].strip())
            assert section["headline"] == f"{gpu}: {verdict}; usable {usable} of the vendor's {vendor}"
        if section["name"] == "pick" and cli.returncode == 0:
            expected = json.loads(lab_utils_cli([*argv, "--json"]).stdout)
            assert json.loads(section["json"]) == expected
            assert section["headline"] == expected["verdict"]
