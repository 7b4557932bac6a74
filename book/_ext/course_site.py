"""Sphinx extension for the course website: offline JavaScript and the course zip.

- Serves MathJax and the ipywidgets HTML manager (with require.js) from ``_static/vendor/``
  when ``web_assets.py`` has unpacked them (pinned, checksum-checked npm packages), so math and
  widgets render with no internet. When they are missing, the public CDN defaults of Sphinx and
  myst-nb stay in place. A value set in _config.yml is never overridden.
- Writes ``book/_generated/course.zip`` (the notebooks and the ``lab_utils`` package, enough to
  run the course offline) before the pages are read, so a ``{download}`` link can offer it.

- Fills ``{{ workshop.NAME }}`` in the pages from ``workshop.toml`` (``workshop.py``).
- Turns the notebooks' plain-Markdown exercises into sphinx-exercise blocks (``exercises.py``):
  JupyterLab and Colab show text, the website numbered exercises with folded solutions.

- Drops the "Open in Colab" badge from the notebooks' headers (it serves readers on GitHub and
  in Jupyter; the website has its own launch button, and its image lives on Colab's server).

- Registers the live calculators (live_calculators.py): the ``{live-calculators}`` directive,
  the course's wheel built at book time, and their script.

- Empties the notebooks' execution cache before anything reads it when the package,
  pyproject.toml or constraints.txt changed since it was filled (execution_cache.py), so no
  build, not even a plain ``jupyter-book build .``, renders a stale execution.

- Fixes console errors the browser test found: a duplicated inline script and an unset theme
  mode on every page, and the widget manager's fonts looked for beside the page.

Loaded by _config.yml: ``sphinx: local_extensions: {course_site: book/_ext}``.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import execution_cache
import exercises
import live_calculators
import notebook_times
import shell_poll
import web_assets
import workshop
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

# What the zip holds, relative to the repository root; folders are taken whole, minus SKIP.
COURSE_ZIP_CONTENT = (
    "README.md",
    "LICENSE",
    "pyproject.toml",
    "constraints.txt",
    "Makefile",
    "workshop.toml",
    "lab_utils",
    "notebooks",
)
COURSE_ZIP_FOLDER = "cpu-vs-gpu-for-ai"  # the top folder learners get when they unzip
SKIP = ("__pycache__", ".ipynb_checkpoints", ".pytest_cache")
ZIP_DATE = (2026, 1, 1, 0, 0, 0)  # fixed, so the same files give the same zip
GENERATED = Path("book") / "_generated"
COLAB_BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"  # scripts/colab_badges.py


def _local(package_name: str) -> str | None:
    """The ``_static``-relative path of a vendored package's entry file, or None if not there."""
    destination, packages = web_assets.read_lock()
    package = next(p for p in packages if p.name == package_name)
    if not web_assets.installed(package, destination):
        return None
    return f"vendor/{package.into}/{package.entry}"


def use_local_assets(app: Sphinx, config: Config) -> None:
    """Point MathJax and the widget manager at the vendored copies when they are present."""
    from myst_nb.core.config import ipywidgets_js_factory
    from sphinx.ext.mathjax import MATHJAX_URL

    destination, _ = web_assets.read_lock()
    if not destination.is_dir():
        logger.info("course_site: no vendored web assets; math and widgets load from the public CDN")
        return
    config.html_static_path.append(str(destination.parent))  # book/_static -> _static/

    mathjax = _local("mathjax")
    if mathjax and config.mathjax_path == MATHJAX_URL:
        config.mathjax_path = mathjax
    requirejs, manager = _local("requirejs"), _local("@jupyter-widgets/html-manager")
    if requirejs and manager and config.nb_ipywidgets_js == ipywidgets_js_factory():
        cdn = "https://cdn.jsdelivr.net/npm/"  # only for third-party widgets, which the course has none of
        config.nb_ipywidgets_js = {requirejs: {}, manager: {"data-jupyter-widgets-cdn": cdn}}
    logger.info(
        f"course_site: MathJax from {config.mathjax_path}; widgets from {', '.join(config.nb_ipywidgets_js)}"
    )


def _skipped(relative: Path) -> bool:
    """Caches, build products, and scratch folders (a leading "_" or ".") left by a notebook run."""
    folders = relative.parts[:-1]
    return relative.name.endswith(".pyc") or any(
        part in SKIP or part.endswith(".egg-info") or part.startswith(("_", ".")) for part in folders
    )


def course_zip_bytes(root: Path) -> bytes:
    """A zip of COURSE_ZIP_CONTENT under ``root``: sorted entries, fixed dates, deflated."""
    files = []
    for name in COURSE_ZIP_CONTENT:
        path = root / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(p for p in path.rglob("*") if p.is_file() and not _skipped(p.relative_to(root)))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(f"{COURSE_ZIP_FOLDER}/{path.relative_to(root).as_posix()}", ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    return buffer.getvalue()


def write_course_zip(app: Sphinx) -> None:
    """Write book/_generated/course.zip, only when its content changed."""
    root = Path(app.srcdir)
    target = root / GENERATED / "course.zip"
    data = course_zip_bytes(root)
    if target.is_file() and target.read_bytes() == data:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".zip.partial")
    partial.write_bytes(data)
    partial.replace(target)
    logger.info(f"course_site: wrote {target.relative_to(root)} ({len(data) / 1e6:.1f} MB)")


def drop_duplicate_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Keep the first of two identical inline scripts on a page.

    Sphinx 7.4 lists an inline script added after the builder started twice (once with the file
    name None, once with ''), so sphinx-thebe's ``const THEBE_JS_URL = ...`` ran twice and threw a
    SyntaxError on every page (found by tests/site). Identity here ignores that difference only.
    """
    if "script_files" not in context:
        return
    seen, kept = set(), []
    for script in context["script_files"]:
        key = (script.filename or "", script.priority, tuple(sorted(script.attributes.items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def widget_assets_path(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Tell the widget manager where its files are, on pages that load it.

    The manager's bundle takes its fonts' address from its require.js module address, which
    require.js makes relative to the page: a page in notebooks/ asked for
    notebooks/@jupyter-widgets/html-manager/dist/*.woff2 or notebooks/@jupyter-widgets/*.woff2 and
    got 404s (found by tests/site). A require.js configuration set before require.js loads maps
    the bundle's modules (@jupyter-widgets/...) to its real folder.
    """
    manager = next(
        (
            script.filename
            for script in context.get("script_files", [])
            if (script.filename or "").endswith("html-manager/dist/embed-amd.js")
        ),
        None,
    )
    if manager is None:
        return
    folder = json.dumps(manager.rsplit("/", 1)[0])  # _static/vendor/.../dist, or a CDN address
    app.add_js_file(
        None,
        priority=499,
        body=(  # before require.js and the manager (500)
            "(() => { const root = new URL("
            "document.documentElement.dataset.content_root || './', document.baseURI);"
            f" const dist = new URL({folder} + '/', root).href;"
            " window.__jupyter_widgets_assets_path__ = dist;"
            " const folder = dist.slice(0, -1);"  # the longest prefix wins: each bundled module sits in dist/
            " window.require = {paths: {'@jupyter-widgets': folder,"
            " '@jupyter-widgets/html-manager/dist': folder}}; })();"
        ),
    )


def drop_colab_badges(app: Sphinx, doctree) -> None:
    """Remove each link to Colab that shows Colab's badge image (scripts/colab_badges.py writes them)."""
    for image in list(doctree.findall(nodes.image)):
        link = image.parent
        if (
            image.get("uri") == COLAB_BADGE_IMAGE
            and isinstance(link, nodes.reference)
            and link.get("refuri", "").startswith("https://colab.research.google.com/")
        ):
            link.parent.remove(link)


def theme_defaults(app: Sphinx, config: Config) -> None:
    """Start in the reader's own light or dark mode ("auto") unless _config.yml chose one.

    Without it the theme's script logs "Got invalid theme mode" as a console error on a
    reader's first visit (found by tests/site).
    """
    config.html_context.setdefault("default_mode", "auto")  # pydata-sphinx-theme reads it here


def check_execution_cache(app: Sphinx, config: Config) -> None:
    """Empty the execution cache when it was filled under another course key."""
    folder = Path(app.srcdir) / config.nb_execution_cache_path
    if config.nb_execution_mode == "cache" and execution_cache.invalidate_if_stale(folder, Path(app.srcdir)):
        logger.info(f"course_site: the package or its pins changed; emptied the execution cache {folder}")


def setup(app: Sphinx) -> dict:
    shell_poll.install()  # a notebook the cache lacks is executed by myst-nb's nbclient
    app.connect("config-inited", check_execution_cache)
    live_calculators.setup(app)  # the live calculators page: Pyodide and the course's wheel
    notebook_times.setup(app)  # the build-status page: each notebook's time from the cache
    app.connect("config-inited", use_local_assets)
    app.connect("config-inited", theme_defaults)
    app.connect("html-page-context", widget_assets_path, priority=800)  # after myst-nb adds the manager
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    app.connect("config-inited", lambda app, config: write_course_zip(app))
    app.connect("source-read", exercises.convert_source)
    app.connect("source-read", workshop.fill_source)  # {{ workshop.NAME }} from workshop.toml
    app.connect("doctree-read", drop_colab_badges, priority=100)  # before Sphinx collects the images
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
