"""The built website, the way a reader sees it: every page opened in headless Chromium.

Served on 127.0.0.1; the browser reaches nothing else, so a page that needs the internet for its
math or widgets fails here. Each page fails with the list of what is wrong on it; a screenshot of
each page lands in _build/site-test/screenshots/.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import sitecheck
import yaml
from site_settings import ROOT, SITE_HTML, SITE_SOURCE, SKIP_REASON

pytestmark = pytest.mark.skipif(not SITE_HTML, reason=SKIP_REASON)

HTML = Path(SITE_HTML).resolve() if SITE_HTML else None
PAGES = sitecheck.site_pages(HTML) if HTML and HTML.is_dir() else []
PAGE_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def site_url():
    with sitecheck.serve(HTML) as url:
        yield url


def toc_files() -> list[str]:
    """Every file named in _toc.yml (root, chapters, sections), without its suffix."""
    toc = yaml.safe_load((SITE_SOURCE / "_toc.yml").read_text(encoding="utf-8"))
    found = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                found.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return [re.sub(r"\.(md|ipynb)$", "", name) for name in found]


def test_the_site_is_built():
    assert HTML.is_dir() and (HTML / "index.html").is_file(), (
        f"no built website at {SITE_HTML}: run `make test-book` first"
    )


def test_every_page_of_the_table_of_contents_is_visited():
    missing = [name for name in toc_files() if f"{name}.html" not in PAGES]
    assert not missing, f"pages in _toc.yml with no HTML page in {SITE_HTML}: {missing}"


def test_math_and_widgets_are_served_by_the_site_itself():
    """MathJax, require.js and the widget manager load from _static/, not a CDN (offline rooms)."""
    remote = {}
    for page in PAGES:
        text = (HTML / page).read_text(encoding="utf-8")
        sources = re.findall(r'<script[^>]*\ssrc="([^"]+)"', text)
        found = [
            src
            for src in sources
            if "://" in src and re.search(r"mathjax|require\.?js|html-manager|embed-amd", src, re.IGNORECASE)
        ]
        if found:
            remote[page] = found
    assert not remote, (
        "pages load math or widget code from the internet, so they break offline; "
        "run `python3 book/_ext/web_assets.py` (needs npm and the registry) and rebuild: "
        f"{remote}"
    )


@pytest.mark.parametrize("page", PAGES)
def test_page_reads_well(page, browser, tab, site_url, screenshots, page_reports, deadline):
    if time.monotonic() > deadline:
        pytest.fail(f"{page}: not opened, the site test ran past its time budget (SITE_TEST_BUDGET_S)")
    source = (HTML / page).read_text(encoding="utf-8")
    target = sitecheck.redirect_target(source)
    if target is not None:  # index.html: checked as the page it sends the reader to
        resolved = (Path(page).parent / target).as_posix()
        assert resolved in PAGES, f"{page} redirects to {target}, which is not a page of the site"
        return
    shot = screenshots / (page.removesuffix(".html").replace("/", "__") + ".png")
    report = sitecheck.check_page(
        browser, tab, sitecheck.page_url(site_url, page), shot, timeout_s=PAGE_TIMEOUT_S
    )
    problems = list(report.problems) + [
        sitecheck.Problem("prose-in-math", f"text typeset as math (escape $ as \\$?): {tex}")
        for tex in sitecheck.prose_in_math(source)
    ]
    page_reports.append(report)
    assert not problems, f"{page} ({shot.relative_to(ROOT)}):\n  " + "\n  ".join(map(str, problems))
