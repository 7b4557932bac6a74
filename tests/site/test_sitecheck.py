"""The page checker itself: each kind of defect on a small page is caught, a clean page passes,
and the site's own MathJax and widget manager render with no internet."""

from __future__ import annotations

import base64
import html
import json
import sys
from pathlib import Path

import pytest
import sitecheck
from site_settings import ROOT, SITE_HTML, SKIP_REASON

pytestmark = pytest.mark.skipif(not SITE_HTML, reason=SKIP_REASON)

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import web_assets  # noqa: E402 - the lock file's reader, beside the Sphinx extension

DOT_PNG = base64.b64decode(  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
VIEW = sitecheck.WIDGET_VIEW

PAGES = {
    "clean.html": '<p>A price of $3 and $4, a path C:/data.</p><img src="dot.png" alt="a dot">'
    "<pre>\\(x\\) $$y$$ \\begin{align}</pre><code>\\frac{a}{b}</code>",
    "raw_latex.html": "<p>The product costs \\(2mnk\\) FLOPs.</p>",
    "display_latex.html": "<p>$$\\frac{a}{b}$$</p>",
    "no_alt.html": '<img src="dot.png"><img src="dot.png" alt="  ">',
    "js_error.html": "<script>null.property;</script>",
    "console_error.html": '<script>console.error("a widget failed");</script>',
    "missing_file.html": '<img src="missing.png" alt="a missing picture">',
    "internet.html": '<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>',
    "empty_widget.html": f'<div><script type="{VIEW}">{{"model_id": "a", "version_major": 2, '
    '"version_minor": 0}</script></div>',
    "prose_math.html": '<p>about <span class="math notranslate nohighlight">\\(2 per hour on the '
    "secure cloud, so about \\)</span>8</p>",
}

EXPECTED = {
    "raw_latex.html": "raw-latex",
    "display_latex.html": "raw-latex",
    "no_alt.html": "image-alt",
    "js_error.html": "javascript",
    "console_error.html": "console",
    "missing_file.html": "network",
    "internet.html": "network",
    "empty_widget.html": "empty-widget",
}


def _page(body: str, head: str = "") -> str:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'>{head}</head><body>{body}</body></html>"


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fixture-site")
    (folder / "dot.png").write_bytes(DOT_PNG)
    for name, body in PAGES.items():
        (folder / name).write_text(_page(body), encoding="utf-8")
    destination, _ = web_assets.read_lock()
    if destination.is_dir():
        (folder / "vendor").symlink_to(destination, target_is_directory=True)
    with sitecheck.serve(folder) as url:
        yield folder, url


def _check(browser, tab, url, page):
    return sitecheck.check_page(browser, tab, sitecheck.page_url(url, page), timeout_s=30)


def test_a_clean_page_passes(browser, tab, fixture_site):
    report = _check(browser, tab, fixture_site[1], "clean.html")
    assert report.problems == (), report.problems


@pytest.mark.parametrize("page, kind", sorted(EXPECTED.items()))
def test_each_defect_is_caught(browser, tab, fixture_site, page, kind):
    report = _check(browser, tab, fixture_site[1], page)
    assert kind in {problem.kind for problem in report.problems}, report.problems


def test_a_missing_image_is_reported_as_broken(browser, tab, fixture_site):
    report = _check(browser, tab, fixture_site[1], "missing_file.html")
    assert any(p.kind == "broken-image" and "missing.png" in p.detail for p in report.problems)


def test_dollar_amounts_typeset_as_math_are_found():
    assert sitecheck.prose_in_math(PAGES["prose_math.html"])
    real_math = '<span class="math notranslate nohighlight">\\(\\text{time per step} = 6 N / F\\)</span>'
    assert sitecheck.prose_in_math(real_math) == []


def _vendored(name):
    destination, packages = web_assets.read_lock()
    package = next(p for p in packages if p.name == name)
    if not web_assets.installed(package, destination):
        pytest.fail(f"{package.spec} is not in {destination}: run `python3 book/_ext/web_assets.py`")
    return f"vendor/{package.into}/{package.entry}"


def test_the_sites_mathjax_renders_offline(browser, tab, fixture_site):
    folder, url = fixture_site
    head = (
        f'<script>window.MathJax = {{options: {{processHtmlClass: "math"}}}}</script>'
        f'<script defer src="{_vendored("mathjax")}"></script>'
    )
    body = (
        '<p>Cost: <span class="math">\\(2mnk\\)</span> FLOPs.</p><div class="math">\\[\\frac{a}{b}\\]</div>'
    )
    (folder / "mathjax.html").write_text(_page(body, head), encoding="utf-8")
    report = _check(browser, tab, url, "mathjax.html")
    assert report.problems == () and report.math_elements == 2, report


def test_the_sites_widget_manager_renders_offline(browser, tab, fixture_site):
    import ipywidgets
    from ipywidgets.embed import embed_data

    folder, url = fixture_site
    slider = ipywidgets.IntSlider(value=3, description="batch")
    data = embed_data(views=[slider])
    head = (
        f'<script src="{_vendored("requirejs")}"></script>'
        f'<script src="{_vendored("@jupyter-widgets/html-manager")}"></script>'
        f'<script type="application/vnd.jupyter.widget-state+json">'
        f"{html.escape(json.dumps(data['manager_state']), quote=False)}</script>"
    )
    body = f'<div><script type="{VIEW}">{json.dumps(data["view_specs"][0])}</script></div>'
    (folder / "widget.html").write_text(_page(body, head), encoding="utf-8")
    report = _check(browser, tab, url, "widget.html")
    slider.close()
    assert report.problems == () and report.widget_views == 1, report


def test_a_crashed_tab_is_said_at_once(browser):
    """A renderer that crashes (as Chromium 156's did, now and then, six pages after the live
    calculators: a worker ended in the back-forward cache) fails the page at once, saying so,
    instead of a wait for an answer that cannot come."""
    crashing = browser.new_page()
    browser.events.clear()
    browser.call("Page.navigate", {"url": "chrome://crash", "transitionType": "typed"}, session_id=crashing)
    with pytest.raises(sitecheck.BrowserError, match="renderer crashed"):
        browser.wait_for_event("Page.loadEventFired", crashing, 60)
    assert [p.kind for p in sitecheck._event_problems(browser.events, crashing)] == ["crash"]
    crashes = Path(browser.profile_dir) / "config" / "chromium" / "Crash Reports"
    assert crashes.is_dir(), "Chromium's crash reports are kept in the profile, not in ~/.config"


def test_a_process_left_behind_would_be_found(tmp_path):
    """The leftover check sees a process in the browser's session or carrying its profile."""
    import os
    import signal
    import subprocess
    import time

    sleeper = subprocess.Popen(["sleep", "30"], start_new_session=True)
    # a shell named after the profile ($0), kept alive by a second command so it does not exec sleep
    marked = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 30; :", f"--user-data-dir={tmp_path}"], start_new_session=True
    )
    try:
        stand_in = sitecheck.Browser("chromium", tmp_path)
        stand_in.pid = sleeper.pid  # as if it were the browser, leader of its own session
        assert {sleeper.pid, marked.pid} <= set(stand_in.process_ids())
    finally:
        for process in (sleeper, marked):  # each with what it started (the shell's sleep, forked
            os.killpg(process.pid, signal.SIGKILL)  # with the profile on its command line until it execs)
            process.wait()
    deadline_s = time.monotonic() + 10  # the kernel removes a killed child a moment later on a busy machine
    while stand_in.process_ids() and time.monotonic() < deadline_s:
        time.sleep(0.05)
    assert not stand_in.process_ids()
