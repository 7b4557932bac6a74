"""Fixtures of the browser tests: one headless Chromium for the session, stopped afterwards.

The tests here run when SITE_HTML names a built website (``make test-site`` sets it to the
strict build); a plain ``pytest tests`` skips them.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from pathlib import Path

import pytest
import sitecheck
from site_settings import ARTEFACTS, ROOT

_reports: list[sitecheck.PageReport] = []


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium with a fresh profile in a temporary folder, closed and checked gone."""
    executable = sitecheck.find_chromium()
    if executable is None:
        pytest.fail("no Chromium found: `make site-deps` installs it, or set CHROMIUM=/path/to/chrome")
    with tempfile.TemporaryDirectory(prefix="site-test-profile-") as profile:
        chromium = sitecheck.Browser(executable, Path(profile))
        try:
            chromium.start()
            yield chromium
        finally:
            forced = chromium.close()
            time.sleep(0.2)
            left = chromium.process_ids()
    assert not Path(profile).exists(), f"the browser profile {profile} was not removed"
    assert not left, f"browser processes left running after the test: {left}"
    if forced:
        warnings.warn(f"the browser did not quit when asked; stopped processes {forced}", stacklevel=2)


@pytest.fixture(scope="session")
def tab(browser):
    """The session id of one tab, reused for every page."""
    return browser.new_page()


@pytest.fixture(scope="session")
def page_reports():
    """Every PageReport of the session, for the summary at the end."""
    return _reports


def pytest_terminal_summary(terminalreporter):
    if not _reports:
        return
    seconds = sum(report.seconds for report in _reports)
    lines = [
        f"{report.seconds:6.1f} s  {report.url.split('/', 3)[-1]}  math: {report.math_elements}, widgets: "
        f"{report.widget_views}, problems: {len(report.problems)}"
        for report in _reports
    ]
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    (ARTEFACTS / "report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    terminalreporter.write_line(
        f"site test: opened {len(_reports)} pages in {seconds:.1f} s of browser time; "
        f"per page in {(ARTEFACTS / 'report.txt').relative_to(ROOT)}, screenshots in "
        f"{(ARTEFACTS / 'screenshots').relative_to(ROOT)}/"
    )


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """A fresh folder for this run's screenshots."""
    folder = ARTEFACTS / "screenshots"
    if folder.is_dir():
        for old in folder.glob("*.png"):
            old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def deadline() -> float:
    """The monotonic time after which no further page is opened (the whole run stays bounded)."""
    return time.monotonic() + float(os.environ.get("SITE_TEST_BUDGET_S", "900"))
