"""The live calculators page (book/calculators.md) in headless Chromium with no network, as a reader
uses it: the form works while Python loads (in a Web Worker), then each answer equals what the
`lab-utils` command prints for the same options, and each figure's data equals the command's
--json, for several inputs; a pasted config.json of a mixture of experts and a bad one (the CLI's
one-line error); the page again after another page, from the back-forward cache (Python started
again); the page again with the server stopped (the service worker's cache); the page at a phone's
width. The page's download size and its time to the first answer are written to
_build/site-test/live-calculators.json, screenshots (the page, each figure, the phone) beside it."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sitecheck
from site_settings import ARTEFACTS, SITE_HTML, SKIP_REASON

pytestmark = pytest.mark.skipif(not SITE_HTML, reason=SKIP_REASON)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
import live_calculators  # noqa: E402  (the commands the page first answers)

HTML = Path(SITE_HTML).resolve() if SITE_HTML else None
PAGE = "book/calculators.html"
PYTHON_TIMEOUT_S = 180  # loading Pyodide and the course on a busy 2-core machine
# The inputs the reader changes, one answer set each (names of the form's fields).
INPUTS = [
    {},  # the page's first answer, as it opens
    {
        "method": "inference",
        "model": "Qwen2.5-7B",
        "gpu": "RTX 4090",
        "requests_per_day": "5000",
        "load": "concurrency",
        "load_value": "8",
        "prompt_len": "500",
        "output_len": "100",
        "precision": "fp8",
        "slo_ttft_ms": "300",
    },
    {"method": "qlora", "model": "Llama-3.1-70B", "gpu": "A100 80GB SXM", "seq_len": "2048", "tokens": "5e7"},
    {"method": "full", "model": "Llama-3.2-1B", "gpu": "T4", "seq_len": "1024", "tokens": "2e8"},
]
FIGURES = ARTEFACTS / "live-figures"  # a screenshot of each figure

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
    figure: s.dataset.figure ? JSON.parse(s.dataset.figure) : null,
    figureShown: !s.querySelector(".live-figure").hidden,
    alt: s.querySelector(".live-alt").textContent,
    label: (s.querySelector(".live-svg svg") || {getAttribute: () => null}).getAttribute("aria-label"),
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
          files: resources.length, worker: api.workerTimings || null};
})()
""".replace("%d", str(PYTHON_TIMEOUT_S * 1000))


# Waits until a worker other than the one made at firstStartMs (ms on the page's clock) answers.
RESTARTED_JS = """
(async (firstStartMs) => {
  const deadline = Date.now() + %d;
  const api = window.liveCalculators;
  while (Date.now() < deadline && (window.liveCalculatorsStart.startedMs === firstStartMs
                                    || !["ready", "error"].includes(api.state))) {
    await new Promise((r) => setTimeout(r, 100));
  }
  return {state: api.state, error: api.error, states: api.timeline.map((e) => e.state),
          restarted: window.liveCalculatorsStart.startedMs !== firstStartMs};
})""".replace("%d", str(PYTHON_TIMEOUT_S * 1000))


def lab_utils_cli(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The `lab-utils` command of this environment, run with ``argv`` (in ``cwd``)."""
    return subprocess.run(
        [sys.executable, "-m", "lab_utils.cli", *argv], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def screenshot(browser, tab, path: Path, selector: str | None = None) -> None:
    """A PNG of the page (its viewport) or of the element ``selector`` (scrolled into view)."""
    params = {"format": "png"}
    if selector:
        box = sitecheck._evaluate(
            browser,
            tab,
            f"""(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();
              const r = e.getBoundingClientRect();
              return {{x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height}}; }})()""",
            10,
        )
        params["clip"] = dict(box, scale=1)
        params["captureBeyondViewport"] = True
    shot = browser.call("Page.captureScreenshot", params, session_id=tab, timeout_s=30)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


@pytest.fixture(scope="module")
def opened(browser, tab):
    """The page opened once; what it showed at its load event, when Python answered, and a
    function that stops the page's server (the network cut)."""
    assert (HTML / PAGE).is_file(), f"no {PAGE} in {SITE_HTML}"
    with contextlib.ExitStack() as server:
        base = server.enter_context(sitecheck.serve(HTML))
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
        yield browser, tab, at_load, ready, server.close


def test_the_form_works_before_python_and_the_answers_follow(opened):
    browser, tab, at_load, ready, _ = opened
    assert not at_load["disabled"]
    assert "--seq-len 1234" in at_load["memory"], "the command line follows the form before Python loads"
    assert ready["state"] == "ready", f"the calculators did not answer: {ready['error']}"
    in_worker = "window.liveCalculators.worker instanceof Worker"
    assert sitecheck._evaluate(browser, tab, in_worker, 10), "Python runs in a Web Worker, not the page"
    states = [entry["state"] for entry in ready["timeline"]]
    assert states[0] == "loading" and "ready" in states, states
    assert ready["formReadyMs"] < ready["pythonReadyMs"] <= ready["firstAnswerMs"]
    # Python's memory kept at build time (after these very commands, as the form first shows
    # them) is what the first visit restores, wherever the build had Node.js to keep it
    manifest = json.loads((HTML / "_static" / "live" / "packages.json").read_text(encoding="utf-8"))
    assert bool(manifest["snapshot"]) == (shutil.which("node") is not None), manifest["snapshot"]
    assert bool(ready["worker"].get("restored")) == bool(manifest["snapshot"]), ready["worker"]
    # a first visit: the service worker was registered before Python started, and answered its
    # files (keeping each, and beside it the runtime's compiled code for the next visit)
    expected = {"pyodide.asm.wasm"} | ({Path(manifest["snapshot"]).name} if manifest["snapshot"] else set())
    assert expected <= set(ready["worker"]["viaServiceWorker"]), ready["worker"]
    argv_shown = "[...document.querySelectorAll('[data-command]')].map((s) => JSON.parse(s.dataset.argv))"
    shown = sitecheck._evaluate(browser, tab, argv_shown, 10)
    assert shown == live_calculators.first_commands()
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
            "worker",
        )
    }
    (ARTEFACTS / "live-calculators.json").write_text(json.dumps(measured, indent=1) + "\n", encoding="utf-8")
    print(
        f"\nlive calculators: first answer {ready['firstAnswerMs'] / 1e3:.1f} s after navigation, "
        f"{(ready['bodyBytes'] + (ready['worker'] or {}).get('bodyBytes', 0)) / 1e6:.1f} MB"
    )


def figure_matches(name: str, figure: dict, answer: dict, gpu: str, argv: list[str]) -> None:
    """The values a figure drew are the command's --json values, none computed by the page."""
    if name == "memory":
        positive = {label: value for label, value in answer["parts_bytes"].items() if value > 0}
        assert figure["parts_bytes"] == positive and figure["total_bytes"] == answer["total_bytes"]
        assert figure["usable_bytes"] == answer["usable_bytes"][gpu]
        assert figure["gpus_needed"] == answer["gpus_needed"][gpu]
    elif name == "pick":
        options = {o["name"]: o for o in answer["options"]}
        assert figure, "the ranking figure drew no option"
        for point in figure:
            option = options[point["name"]]
            assert option["works"]
            assert point["cost_usd"] == option.get("cost_usd", option.get(f"cost_per_{answer['period']}_usd"))
            time_key = "latency_s" if "latency_s" in point else "hours"
            assert point[time_key] == option[time_key]
    elif name == "latency":  # the targets drawn are the command's own --slo-*-ms
        targets = {key: figure.pop(key) for key in ("slo_ttft_ms", "slo_tpot_ms")}
        assert targets == {key: float(argv[argv.index("--" + key.replace("_", "-")) + 1]) for key in targets}
        assert figure and _first_difference(figure, {key: answer[key] for key in figure}) is None
    else:
        assert figure == answer["curve"]


@pytest.mark.parametrize(
    "values", INPUTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()) or "start"
)
def test_each_answer_is_what_the_cli_prints_and_each_figure_its_json(opened, values):
    browser, tab, _, ready, _ = opened
    assert ready["state"] == "ready", f"the calculators did not answer: {ready['error']}"
    shown = sitecheck._evaluate(browser, tab, SET_INPUTS_JS % json.dumps(values), 120)
    assert [s["name"] for s in shown] == ["memory", "cost", "pick", "latency"]
    for section in shown:
        argv = section["argv"]
        for name, value in values.items():
            flag = "--" + (value if name == "load" else name.replace("_", "-"))
            if flag in argv and name != "load_value":
                taken = argv[argv.index(flag) + 1]
                assert taken == values.get("load_value" if name == "load" else name), (
                    f"{section['name']}: {flag}"
                )
        assert section["command"] == "lab-utils " + " ".join(a if " " not in a else f"'{a}'" for a in argv)
        cli = lab_utils_cli(argv)
        assert section["status"] == cli.returncode, (section["name"], cli.stderr)
        assert section["output"] == (cli.stdout if cli.returncode == 0 else cli.stderr), section["name"]
        if section["name"] == "memory" and cli.returncode == 0:  # the chosen GPU's row of the CLI's table
            gpu = section["gpu"]
            row = next(line for line in cli.stdout.splitlines() if line.startswith(gpu + "  "))
            vendor, usable, verdict = re.split(r"\s{2,}", row[len(gpu) :].strip())
            assert section["headline"] == f"{gpu}: {verdict}; usable {usable} of the vendor's {vendor}"
        if cli.returncode != 0:
            continue
        expected = json.loads(lab_utils_cli([*argv, "--json"]).stdout)
        page = json.loads(section["json"])
        difference = _first_difference(page, expected)
        assert difference is None, f"{section['name']}: the page's JSON is the CLI's, but {difference}"
        if section["name"] == "pick":
            assert section["headline"] == expected["verdict"]
        if section["name"] == "cost" and "curve" not in expected:
            assert not section["figureShown"]  # a fine-tune's cost has no curve of requests a day
            continue
        assert section["figureShown"] and section["alt"] and section["label"], f"{section['name']}: no figure"
        assert re.search(r"\d", section["alt"]), "the text alternative states the figure's numbers"
        figure_matches(section["name"], section["figure"], expected, section["gpu"], argv)
        slug = "-".join(values.get(k, "start") for k in ("method",)) + "-" + section["name"]
        screenshot(browser, tab, FIGURES / f"{slug}.png", f'[data-command="{section["name"]}"] .live-figure')


def own_model(browser, tab, text: str) -> dict:
    """The answers with ``text`` in the config.json box."""
    return {
        s["name"]: s
        for s in sitecheck._evaluate(
            browser, tab, SET_INPUTS_JS % json.dumps({"method": "inference", "config": text}), 120
        )
    }


def cli_in(folder: Path, text: str, argv: list[str]) -> subprocess.CompletedProcess:
    """The CLI run where ``config.json`` holds ``text``, as the page writes it."""
    (folder / "config.json").write_text(text, encoding="utf-8")
    return lab_utils_cli(argv, cwd=folder)


def test_a_pasted_config_of_a_mixture_of_experts_answers_as_the_cli(opened, tmp_path):
    browser, tab, _, ready, _ = opened
    moe = json.dumps(
        {
            "model_type": "mixtral",  # a small one: it fits the form's GPU, so every answer is one
            "architectures": ["MixtralForCausalLM"],
            "hidden_size": 1024,
            "intermediate_size": 3584,
            "num_hidden_layers": 16,
            "num_attention_heads": 16,
            "num_key_value_heads": 4,
            "num_local_experts": 8,
            "num_experts_per_tok": 2,
            "vocab_size": 32000,
            "max_position_embeddings": 32768,
            "tie_word_embeddings": False,
        },
        indent=1,
    )
    from lab_utils import llms

    config = llms.from_hf_config(json.loads(moe))
    assert config.params_per_token < config.n_params, "a mixture of experts: a token skips experts"
    shown = own_model(browser, tab, moe)
    for name, section in shown.items():
        assert section["argv"][section["argv"].index("--model") + 1] == "config.json"
        cli = cli_in(tmp_path, moe, section["argv"])
        assert section["status"] == cli.returncode == 0, (name, cli.stderr)
        assert section["output"] == cli.stdout, name


def test_a_config_it_cannot_read_gets_the_clis_one_line_error(opened, tmp_path):
    browser, tab, _, ready, _ = opened
    bad = '{"model_type": "llama", "hidden_size": '
    shown = own_model(browser, tab, bad)
    for name, section in shown.items():
        cli = cli_in(tmp_path, bad, section["argv"])
        assert section["status"] == cli.returncode == 2, (name, cli.stderr)
        assert section["output"] == cli.stderr and cli.stderr.count("\n") == 1, name
    own_model(browser, tab, "")  # back to the catalog's models


def test_without_a_kept_memory_python_starts_afresh_and_answers_the_same(opened):
    """A build that kept no memory (no Node.js), or a browser that cannot restore it: packages.json
    served here without it, at another address (another origin: no service worker, no cache), in
    a tab of its own. The worker starts Python, runs live_answer.py and answers as the CLI."""
    browser, _, _, _, _ = opened
    manifest = json.loads((HTML / "_static" / "live" / "packages.json").read_text(encoding="utf-8"))
    without = json.dumps({**manifest, "snapshot": None}).encode()
    with sitecheck.serve(HTML, overrides={"_static/live/packages.json": without}) as base:
        tab = browser.new_page()
        try:
            browser.call("Page.navigate", {"url": sitecheck.page_url(base, PAGE)}, session_id=tab)
            assert browser.wait_for_event("Page.loadEventFired", tab, 60), "the page did not load"
            ready = sitecheck._evaluate(browser, tab, WAIT_READY_JS, PYTHON_TIMEOUT_S + 10)
            assert ready["state"] == "ready", f"started afresh, the page did not answer: {ready['error']}"
            changed = SET_INPUTS_JS % json.dumps({"seq_len": "3000"})
            memory = sitecheck._evaluate(browser, tab, changed, 120)[0]
        finally:
            target = browser.call("Target.getTargetInfo", session_id=tab)["targetInfo"]["targetId"]
            browser.call("Target.closeTarget", {"targetId": target})
    assert not ready["worker"].get("restored") and "restoreError" not in ready["worker"], ready["worker"]
    assert memory["status"] == 0 and memory["output"] == lab_utils_cli(memory["argv"]).stdout


def test_the_page_fits_a_phone(opened):
    browser, tab, _, ready, _ = opened
    phone = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
    browser.call("Emulation.setDeviceMetricsOverride", phone, session_id=tab)
    try:
        sitecheck._evaluate(browser, tab, SET_INPUTS_JS % json.dumps({"method": "inference"}), 120)
        widths = sitecheck._evaluate(
            browser,
            tab,
            """(() => ({page: document.documentElement.scrollWidth, viewport: innerWidth,
                wide: [...document.querySelectorAll(".live-calculators *")]
                  .filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest("pre"))
                  .map((e) => e.tagName + "." + e.className).slice(0, 5)}))()""",
            10,
        )
        screenshot(browser, tab, FIGURES / "phone-390px.png", ".live-calculators")
    finally:
        browser.call("Emulation.setDeviceMetricsOverride", sitecheck.VIEWPORT, session_id=tab)
    assert widths["viewport"] == 390
    assert widths["page"] <= 390, f"the page scrolls sideways at 390 px: {widths}"
    assert not widths["wide"], widths


def test_coming_back_from_the_back_forward_cache_starts_python_again(opened):
    """Leaving the page for another keeps it in Chromium's back-forward cache with its worker
    ended (Chromium 156 crashed the tab's renderer now and then when it ended a worker left
    frozen there: the cache holds six pages, so six pages later). Coming back starts Python
    again, and the next answer is still the CLI's."""
    browser, tab, _, ready, _ = opened
    assert ready["state"] == "ready", f"the calculators did not answer: {ready['error']}"
    first_start_ms, origin = sitecheck._evaluate(
        browser, tab, "[window.liveCalculatorsStart.startedMs, location.origin]", 10
    )
    browser.events.clear()
    browser.call("Page.navigate", {"url": f"{origin}/book/glossary.html"}, session_id=tab)
    assert browser.wait_for_event("Page.loadEventFired", tab, 60), "the glossary did not load"
    history = browser.call("Page.getNavigationHistory", session_id=tab)
    browser.events.clear()
    back = history["entries"][history["currentIndex"] - 1]
    browser.call("Page.navigateToHistoryEntry", {"entryId": back["id"]}, session_id=tab)
    arrived = browser.wait_for_event("Page.frameNavigated", tab, 60)
    assert arrived and arrived["params"]["frame"]["url"].endswith(PAGE), arrived
    assert arrived["params"].get("type") == "BackForwardCacheRestore", (
        "the page came back without the back-forward cache, so this test checks nothing: "
        f"{[e['params'] for e in browser.events if e['method'] == 'Page.backForwardCacheNotUsed']}"
    )
    again = sitecheck._evaluate(
        browser, tab, f"{RESTARTED_JS}({json.dumps(first_start_ms)})", PYTHON_TIMEOUT_S + 10
    )
    assert again["restarted"] and again["state"] == "ready", again
    states = again["states"]  # loading as it came back, after answers shown before
    assert "loading" in states[states.index("ready") :] and states[-1] == "ready", states
    memory = sitecheck._evaluate(browser, tab, SET_INPUTS_JS % json.dumps({"seq_len": "3000"}), 120)[0]
    assert "--seq-len" in memory["argv"] and memory["argv"][memory["argv"].index("--seq-len") + 1] == "3000"
    assert memory["status"] == 0 and memory["output"] == lab_utils_cli(memory["argv"]).stdout
    problems = sitecheck._event_problems(browser.events, tab)
    assert not problems, "\n".join(map(str, problems))
    default = sitecheck._evaluate(
        browser, tab, 'document.querySelector(".live-calculators form").elements.seq_len.defaultValue', 10
    )
    sitecheck._evaluate(browser, tab, SET_INPUTS_JS % json.dumps({"seq_len": default}), 120)


def test_the_page_works_offline_after_the_first_visit(opened):
    """The service worker kept Pyodide, the wheels, Python's memory and the page: with the server
    stopped, the page opens again, restores that memory and answers. Last in this file: it stops
    the server."""
    browser, tab, _, ready, stop_server = opened
    kept = sitecheck._evaluate(
        browser,
        tab,
        """(async () => {
          const deadline = Date.now() + 120000;
          while (Date.now() < deadline) {
            const names = (await caches.keys()).filter((n) => n.startsWith("live-calculators-"));
            if (names.length === 1) {
              const cache = await caches.open(names[0]);
              const page = location.href.split("#")[0];
              if (navigator.serviceWorker.controller && (await cache.match(page))) {
                return {page: true, files: (await cache.keys()).length};
              }
            }
            await new Promise((r) => setTimeout(r, 200));
          }
          return {page: false};
        })()""",
        130,
    )
    assert kept["page"], f"the service worker did not keep the page: {kept}"
    stop_server()
    browser.events.clear()
    browser.call("Page.reload", session_id=tab)  # not ignoreCache: that bypasses the service worker
    assert browser.wait_for_event("Page.loadEventFired", tab, 60), "the page did not load offline"
    again = sitecheck._evaluate(browser, tab, WAIT_READY_JS, PYTHON_TIMEOUT_S + 10)
    assert again["state"] == "ready", f"offline, the calculators did not answer: {again['error']}"
    timings = sitecheck._evaluate(browser, tab, "window.liveCalculators.workerTimings", 10)
    assert timings.get("restored"), f"Python started afresh instead of restoring its memory: {timings}"
    assert timings.get("unzippedEarlier"), f"the memory was unzipped again, not read as kept: {timings}"
    memory = sitecheck._evaluate(browser, tab, SET_INPUTS_JS % "{}", 120)[0]
    assert memory["status"] == 0 and memory["output"] == lab_utils_cli(memory["argv"]).stdout


def _first_difference(page, cli, where="answer"):
    """None when the page's JSON equals the CLI's, floats to 1e-9 of each other (Pyodide's maths
    library may round a last bit differently from this machine's); else where they first differ."""
    if isinstance(page, dict) and isinstance(cli, dict):
        if page.keys() != cli.keys():
            return f"{where} has keys {sorted(page)} on the page, {sorted(cli)} in the CLI"
        return next((d for k in page if (d := _first_difference(page[k], cli[k], f"{where}.{k}"))), None)
    if isinstance(page, list) and isinstance(cli, list):
        if len(page) != len(cli):
            return f"{where} has {len(page)} items on the page, {len(cli)} in the CLI"
        return next(
            (d for i, (a, b) in enumerate(zip(page, cli)) if (d := _first_difference(a, b, f"{where}[{i}]"))),
            None,
        )
    if isinstance(page, float) and isinstance(cli, float):
        return (
            None
            if page == pytest.approx(cli, rel=1e-9)
            else f"{where} is {page!r} on the page, {cli!r} in the CLI"
        )
    return None if page == cli else f"{where} is {page!r} on the page, {cli!r} in the CLI"
