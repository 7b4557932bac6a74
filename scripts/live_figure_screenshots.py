"""Screenshots of the live calculators' figures (book/calculators.md), for readers of the static
website who cannot run Python there, and for the closing notes: each figure the page draws, taken
in headless Chromium from the built website (served on 127.0.0.1, a fresh profile), at a desktop
width (1280 px) and at a phone's (390 px). Each PNG is reduced to 64 colours (Pillow) to stay a
few tens of kB; ``live-figures.json`` beside them lists, for each, the command whose ``--json``
answer it drew.

    python scripts/live_figure_screenshots.py _build/strict/_build/html [--out book/_static/screenshots]

book/calculators.md shows the committed ones: run this again after changing a figure and commit
what it writes (nothing here is drawn by hand).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "site"))
import sitecheck  # noqa: E402

PAGE = "book/calculators.html"
# What the page is set to for each group of figures (its form's field names), and the figures then taken.
SCENES = (
    ({"method": "lora"}, ("memory", "pick")),
    ({"method": "inference"}, ("cost", "pick", "latency")),
)
WIDTHS = {
    "desktop": {"width": 1280, "height": 900, "mobile": False},
    "phone": {"width": 390, "height": 844, "mobile": True},
}

SET_AND_WAIT_JS = """
(async (values) => {
  const deadline = Date.now() + 300000;
  while (!(window.liveCalculators && window.liveCalculators.firstAnswerMs) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const form = document.querySelector(".live-calculators form");
  await window.liveCalculators.pending;
  for (const [name, value] of Object.entries(values)) {
    form.elements[name].value = value;
    form.elements[name].dispatchEvent(new Event("change", {bubbles: true}));
  }
  await window.liveCalculators.pending;
  return window.liveCalculators.state;
})(%s)
"""
FIGURE_BOX_JS = """
(async () => {
  const section = document.querySelector('[data-command="%s"]');
  const figure = section.querySelector(".live-figure");
  if (figure.hidden) return null;
  figure.scrollIntoView({block: "center", behavior: "instant"});  // the theme scrolls smoothly otherwise
  for (let frame = 0; frame < 3; frame++) await new Promise((r) => requestAnimationFrame(r));
  const r = figure.getBoundingClientRect();
  return {box: {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height},
          argv: JSON.parse(section.dataset.argv)};
})()
"""


def small_png(data: bytes) -> bytes:
    """The PNG reduced to 64 colours (the figures are flat colours and text)."""
    from PIL import Image

    image = Image.open(io.BytesIO(data)).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def take(html: Path, out: Path) -> list[dict]:
    """Every scene's figures at both widths, written to ``out``; what each shows."""
    executable = sitecheck.find_chromium()
    if executable is None:
        raise SystemExit("no Chromium found (set CHROMIUM=)")
    out.mkdir(parents=True, exist_ok=True)
    taken = []
    with tempfile.TemporaryDirectory(prefix="live-shots-") as profile, sitecheck.serve(html) as base:
        browser = sitecheck.Browser(executable, Path(profile))
        try:
            browser.start()
            tab = browser.new_page()
            browser.call("Page.navigate", {"url": sitecheck.page_url(base, PAGE)}, session_id=tab)
            if not browser.wait_for_event("Page.loadEventFired", tab, 60):
                raise RuntimeError("the page did not load")
            for values, figures in SCENES:
                for width, metrics in WIDTHS.items():
                    browser.call(
                        "Emulation.setDeviceMetricsOverride",
                        dict(metrics, deviceScaleFactor=1),
                        session_id=tab,
                    )
                    state = sitecheck._evaluate(browser, tab, SET_AND_WAIT_JS % json.dumps(values), 320)
                    if state != "ready":
                        raise RuntimeError(f"the page did not answer: {state}")
                    for command in figures:
                        found = sitecheck._evaluate(browser, tab, FIGURE_BOX_JS % command, 10)
                        if found is None:
                            raise RuntimeError(f"{command} drew no figure for {values}")
                        shot = browser.call(
                            "Page.captureScreenshot",
                            {
                                "format": "png",
                                "clip": dict(found["box"], scale=1),
                                "captureBeyondViewport": True,
                            },
                            session_id=tab,
                            timeout_s=30,
                        )
                        name = f"live-{command}-{values['method']}-{width}.png"
                        png = small_png(base64.b64decode(shot["data"]))
                        (out / name).write_bytes(png)
                        taken.append(
                            {
                                "file": name,
                                "command": shlex.join(["lab-utils", *found["argv"]]),
                                "bytes": len(png),
                            }
                        )
        finally:
            browser.close()
    (out / "live-figures.json").write_text(json.dumps(taken, indent=1) + "\n", encoding="utf-8")
    return taken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("html", type=Path, help="the built website's folder (holds book/calculators.html)")
    parser.add_argument("--out", type=Path, default=ROOT / "book" / "_static" / "screenshots")
    args = parser.parse_args(argv)
    for shot in take(args.html.resolve(), args.out):
        print(f"{shot['file']}: {shot['bytes'] / 1e3:.0f} kB  ({shot['command']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
