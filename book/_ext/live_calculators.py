"""The website's live calculators: the course's own ``lab-utils`` commands, run in the reader's
browser by Pyodide (Python compiled to WebAssembly), offline.

- At build time the course is built into a wheel from this tree (``pip wheel``, no network)
  holding only what the page's commands import or read (:func:`files_the_page_uses`: no
  measuring module, no notebook helper), and tabulate, the one package the command line needs
  beyond the standard library, is packed from the build environment (its version pinned by
  constraints.txt). Both land in
  ``_static/live/`` with ``packages.json`` naming them, so the page runs the tested code of the
  very tree the website was built from and can never drift from it.
- Each wheel also holds its modules compiled by the page's own Pyodide (live_pyc.py, when
  Node.js is there), so the page imports them without compiling their sources first.
- Pyodide itself is vendored by web_assets.py (npm package ``pyodide``, pinned, checksum-checked).
- The directive ``{live-calculators}`` writes the form: the catalog's models and GPUs (read
  from ``lab_utils`` at build time, so the form works before Python has loaded in the page),
  a method, a sequence length, training tokens, requests per day and a box for the reader's
  own ``config.json``. ``live-start.js``, inline at the top of the page's ``<head>`` (with its
  meta tags, before the stylesheets), starts Python in a Web Worker (``live-worker.js``) before
  the page is parsed; ``live-calculators.js`` runs ``lab-utils memory``, ``cost``, ``pick`` and
  ``latency`` with those options through ``lab_utils.cli.main`` there, and shows their answers as
  the CLI prints them, each beside a figure drawn from the command's ``--json`` answer.
- A service worker (``live-calculators-sw.js``, written at the site's root so that its scope
  holds the page, and registered by ``live-start.js`` before Python starts on a first visit)
  keeps Pyodide and the wheels in the browser's cache as they are first fetched, under a name
  made of their SHA-256 hashes (``packages.json`` lists them; the files are fetched with those
  hashes as Subresource Integrity), and the page itself, so a second visit answers at once,
  offline, without compiling Python's runtime again (the browser keeps its compiled code).
- Python's memory is kept at build time (live_snapshot.py: Pyodide's memory snapshot, made in
  Node.js once the page's first commands have run): the page restores it rather than starting
  Python and importing the course, on its first visit as on later ones.

Loaded by course_site.py's setup.
"""

from __future__ import annotations

import base64
import hashlib
import html
import importlib.metadata
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import live_pyc
import live_snapshot
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

logger = logging.getLogger(__name__)

HERE = Path(__file__).parent
GENERATED = Path("book") / "_generated" / "live-static"  # served as _static/ (live/ inside)
GENERATED_ROOT = Path("book") / "_generated" / "live-root"  # copied to the site's root (the service worker)
SERVICE_WORKER = "live-calculators-sw.js"
# live_snapshot.py: Python's memory, restored by the page; gzipped, but not named .gz, which some
# servers send with Content-Encoding: gzip (the browser would unzip it, and its hash then differs)
SNAPSHOT = "python-memory.bin"
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
PURE_DEPENDENCIES = (
    "tabulate",
)  # what lab_utils.cli needs beyond the standard library, for memory/cost/pick
METHODS = ("inference", "lora", "qlora", "full")
LOADS = ("rate", "concurrency")  # lab-utils latency's --rate (Poisson, requests/s) or --concurrency
# The form's first answer: the README's examples (inputs a reader changes, not assumptions);
# latency's: its --help's first example at a fifth of its rate (1,200 requests simulated, not 6,000).
START = {
    "model": "Llama-3.1-8B",
    "gpu": "H100 SXM",
    "method": "lora",
    "tokens": "1e8",
    "requests_per_day": "1000",
    "load": "rate",
    "load_value": "2",
    "prompt_len": "1000",
    "output_len": "200",
    "precision": "checkpoint",
}


def course_wheel(root: Path, destination: Path) -> Path:
    """Build the course's wheel from ``root`` into ``destination``.

    Offline when the environment has setuptools (no build isolation); else pip fetches it as
    ``pip install`` does. The sources are copied to a temporary folder first, so the build
    leaves nothing in the tree.
    """
    with tempfile.TemporaryDirectory(prefix="live-wheel-") as scratch:
        source = Path(scratch) / "source"
        source.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (root / name).is_file():
                shutil.copy2(root / name, source / name)
        shutil.copytree(
            root / "lab_utils", source / "lab_utils", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
        used = files_the_page_uses(source)
        for path in sorted((source / "lab_utils").rglob("*")):
            if path.is_file() and path.name != "__init__.py" and path.resolve() not in used:
                path.unlink()
        out = Path(scratch) / "out"
        offline = ["--no-build-isolation", "--no-index"] if importlib.util.find_spec("setuptools") else []
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                *offline,
                "--wheel-dir",
                str(out),
                str(source),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        wheels = sorted(out.glob("*.whl"))
        if result.returncode != 0 or len(wheels) != 1:
            raise RuntimeError(f"building the course's wheel failed: {result.stderr.strip()[-800:]}")
        destination.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(wheels[0], destination / wheels[0].name))


# Run by files_the_page_uses in a fresh interpreter: every command in argv (JSON) through cli.main
# as the page runs them, then the files of the modules imported and every file opened, as JSON.
_USED_FILES = r"""
import contextlib, io, json, sys
opened = set()
sys.addaudithook(lambda event, args: event == "open" and isinstance(args[0], str) and opened.add(args[0]))
from lab_utils import cli
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli.main(argv, json_answer=lambda text: None)
        except SystemExit:
            pass
modules = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
print(json.dumps(sorted(f for f in modules | opened if f)))
"""


def form_commands(model: str, method: str, seq_len: str) -> list[list[str]]:
    """The commands live-calculators.js's ``commands()`` writes for the form with this model,
    method and sequence length, its other fields as first shown: memory, cost, pick, latency."""
    tokens, gpu, per_day = START["tokens"], START["gpu"], START["requests_per_day"]
    if method == "inference":
        cost = ["cost", "serve", "--model", model, "--gpu", gpu, "--curve"]
        pick = ["pick", "serve", "--model", model, "--requests-per-day", per_day]
    else:
        cost = ["cost", "fine-tune", "--model", model, "--tokens", tokens, "--method", method]
        cost += ["--gpu", gpu, "--seq-len", seq_len]
        pick = ["pick", "fine-tune", "--model", model, "--tokens", tokens, "--method", method]
        pick += ["--seq-len", seq_len]
    memory = ["memory", "--model", model, "--method", method, "--seq-len", seq_len]
    return [memory, cost, pick, latency_command(model, gpu, START["precision"])]


def first_commands() -> list[list[str]]:
    """The commands the page answers as it opens: the form as first shown."""
    from lab_utils import assumptions

    return form_commands(START["model"], START["method"], f"{assumptions.value('seq_len')}")


def page_commands(model: str) -> list[list[str]]:
    """The commands the page runs for ``model``: memory, cost, pick and latency for every method,
    and each command's help."""
    commands = [["memory", "--help"], ["cost", "--help"], ["pick", "--help"], ["latency", "--help"]]
    for method in METHODS:
        commands += [c for c in form_commands(model, method, "2048") if c not in commands]
    return commands


def latency_command(model: str, gpu: str, precision: str) -> list[str]:
    """``lab-utils latency`` as live-calculators.js's ``commands()`` writes it, for the form's
    first load, prompt and output lengths and its SLO (the assumptions' values)."""
    return [
        "latency", "--model", model, "--gpu", gpu, f"--{START['load']}", START["load_value"],
        "--prompt-len", START["prompt_len"], "--output-len", START["output_len"],
        "--precision", precision,
        "--slo-ttft-ms", _slo_ms("slo_ttft_s"), "--slo-tpot-ms", _slo_ms("slo_tpot_s"),
    ]  # fmt: skip


def _slo_ms(name: str) -> str:
    """The latency target assumption ``name`` (seconds) in milliseconds, as the form shows it."""
    from lab_utils import assumptions

    return f"{assumptions.value(name) * 1e3:g}"


def files_the_page_uses(source: Path) -> set[Path]:
    """The files of ``source``'s lab_utils that the page's commands import or read: its commands
    (:func:`page_commands`) run for a dense catalog model, a mixture of experts pasted as a
    config.json, a config it cannot read and a model the catalog lacks, each in a fresh Python
    with only ``source`` on its path. What no command touches (the measuring modules, the
    notebooks' helpers) stays out of the page's wheel."""
    catalog = tomllib.loads((source / "lab_utils" / "data" / "llm_configs.toml").read_text(encoding="utf-8"))
    moe = next(m["config"] for m in catalog["model"] if "num_experts_per_tok" in m.get("config", {}))
    config = json.dumps(moe)
    used: set[Path] = set()
    with tempfile.TemporaryDirectory(prefix="live-used-") as work:
        for model, text in (
            (START["model"], None),
            ("config.json", config),
            ("config.json", "{"),
            ("none", None),
        ):
            if text is not None:
                (Path(work) / "config.json").write_text(text, encoding="utf-8")
            result = subprocess.run(
                [sys.executable, "-c", _USED_FILES, json.dumps(page_commands(model))],
                cwd=work,
                env={**os.environ, "PYTHONPATH": str(source), "PYTHONDONTWRITEBYTECODE": "1"},
                capture_output=True,
                text=True,
                timeout=300,
            )
            if result.returncode != 0:
                raise RuntimeError(f"running the page's commands failed: {result.stderr.strip()[-800:]}")
            used.update(Path(work, f).resolve() for f in json.loads(result.stdout))
    return used


def installed_wheel(name: str, destination: Path) -> Path:
    """A wheel of the installed distribution ``name``: its files as installed (a pure-Python one)."""
    distribution = importlib.metadata.distribution(name)
    files = sorted(
        (
            f
            for f in distribution.files or ()
            if not f.as_posix().startswith("..") and "__pycache__" not in f.parts
        ),
        key=lambda f: f.as_posix(),
    )
    version = distribution.version
    target = destination / f"{distribution.metadata['Name'].replace('-', '_')}-{version}-py3-none-any.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            path = Path(distribution.locate_file(file))
            if path.is_file():
                archive.writestr(
                    zipfile.ZipInfo(file.as_posix(), (2026, 1, 1, 0, 0, 0)),
                    path.read_bytes(),
                    compress_type=zipfile.ZIP_DEFLATED,
                )
    destination.mkdir(parents=True, exist_ok=True)
    target.write_bytes(buffer.getvalue())
    return target


def _sha256(path: Path) -> str:
    """The file's SHA-256 as Subresource Integrity writes it (``sha256-`` and base64)."""
    return "sha256-" + base64.b64encode(hashlib.sha256(path.read_bytes()).digest()).decode()


def build_packages(app: Sphinx) -> None:
    """Write _static/live/ (the course's wheel, its pure dependencies, packages.json naming them
    and Pyodide's files with their hashes) and the service worker that caches them."""
    root = Path(app.srcdir)
    live = root / GENERATED / "live"
    if live.exists():
        shutil.rmtree(live)
    wheels = [course_wheel(root, live)] + [installed_wheel(name, live) for name in PURE_DEPENDENCIES]
    pyodide = pyodide_folder()
    compiled = live_pyc.add_pyc(wheels, pyodide) if pyodide is not None else 0
    setup = (HERE / "live_answer.py").read_text(encoding="utf-8")
    snapshot = live / SNAPSHOT
    kept = pyodide is not None and live_snapshot.make_snapshot(
        wheels, pyodide, setup, first_commands(), snapshot
    )
    served = [*wheels, snapshot] if kept else wheels  # what live/ serves beside packages.json
    pinned = {f"live/{f.name}": _sha256(f) for f in served}
    if pyodide is not None:
        pinned.update({f"vendor/pyodide/{name}": _sha256(pyodide / name) for name in PYODIDE_FILES})
    manifest = {
        "pyodide": "vendor/pyodide/pyodide.mjs",
        "wheels": [w.name for w in wheels],
        "bytes": {f.name: f.stat().st_size for f in served},
        "integrity": pinned,  # _static-relative path -> sha256 (the service worker's cache key)
        "snapshot": f"live/{SNAPSHOT}" if kept else None,
        "setup": setup,  # live_answer.py: run by the worker when there is no snapshot
    }
    (live / "packages.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    write_service_worker(root / GENERATED_ROOT, pinned)
    logger.info(
        f"live_calculators: {', '.join(f'{w.name} ({w.stat().st_size / 1e3:.0f} kB)' for w in wheels)}; "
        + (f"{compiled} .pyc compiled by Pyodide" if compiled else "no .pyc (no Node.js or no Pyodide)")
        + (f"; Python's memory kept ({snapshot.stat().st_size / 1e6:.1f} MB gzipped)" if kept else "")
    )


def write_service_worker(folder: Path, pinned: dict[str, str]) -> Path:
    """The service worker from live_static/, given its cache's name (a hash of every pinned file's
    hash: a new build with other files gets a new cache) and the pinned files."""
    version = hashlib.sha256(json.dumps(pinned, sort_keys=True).encode()).hexdigest()[:16]
    template = (HERE / "live-calculators-sw.template.js").read_text(encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / SERVICE_WORKER
    target.write_text(
        template.replace("__VERSION__", version).replace("__PINNED__", json.dumps(pinned, indent=1)),
        encoding="utf-8",
    )
    return target


def pyodide_folder() -> Path | None:
    """The vendored Pyodide's folder (web_assets.py), or None when it is not there."""
    import web_assets

    destination, packages = web_assets.read_lock()
    package = next(p for p in packages if p.name == "pyodide")
    return destination / package.into if web_assets.installed(package, destination) else None


def add_static_path(app: Sphinx, config) -> None:
    """Serve the page's scripts and the generated wheels from _static/, the service worker from
    the site's root."""
    generated, at_root = Path(app.srcdir) / GENERATED, Path(app.srcdir) / GENERATED_ROOT
    for folder in (generated, at_root):
        folder.mkdir(parents=True, exist_ok=True)  # Sphinx drops a static path that does not exist yet
    config.html_static_path += [str(HERE / "live_static"), str(generated)]
    config.html_extra_path += [str(at_root)]


def download_bytes(root: Path) -> int:
    """What the page downloads for Python: the vendored Pyodide, and the wheels and Python's kept
    memory of _static/live/."""
    import web_assets

    destination, packages = web_assets.read_lock()
    pyodide = destination / next(p for p in packages if p.name == "pyodide").into
    live = root / GENERATED / "live"
    files = [*pyodide.glob("*.*"), *live.glob("*.whl"), live / SNAPSHOT]
    return sum(f.stat().st_size for f in files if f.is_file() and f.name != "package.json")


def _options(values, selected: str) -> str:
    return "".join(
        f'<option value="{html.escape(v)}"{" selected" if v == selected else ""}>{html.escape(v)}</option>'
        for v in values
    )


def form_html(root: Path) -> str:
    """The calculators' HTML: inputs from the catalogs, an answer area per command, a status line."""
    from lab_utils import assumptions, hardware, llms, serving

    models = [m.name for m in llms.catalog()]
    gpus = [s.name for s in hardware.catalog("gpu")]
    seq_len = assumptions.value("seq_len")
    sections = "".join(
        f'<section class="live-answer" data-command="{name}"><h3>{title}</h3>'
        f'<p class="live-uses">{uses}</p>'
        f'<pre class="live-command"></pre><p class="live-headline"></p>'
        '<figure class="live-figure" hidden><div class="live-svg"></div>'
        '<figcaption class="live-alt"></figcaption></figure>'
        f'<pre class="live-output">Computed here when Python has loaded.</pre></section>'
        for name, title, uses in (
            (
                "memory",
                "Will it fit?",
                "Uses the model, the method and the sequence length; every catalog GPU is listed.",
            ),
            (
                "cost",
                "What does it cost?",
                "A fine-tune (method lora, qlora or full): model, method, GPU, sequence "
                "length, training tokens. Inference: serving on the GPU.",
            ),
            (
                "pick",
                "Which hardware ranks first?",
                "Serving (method inference): model and requests per day. "
                "A fine-tune: model, method, sequence length, training tokens.",
            ),
            (
                "latency",
                "What will users wait?",
                "One serving replica simulated request by request: model, GPU, the load (requests a "
                "second, or requests kept in flight), prompt and output lengths, precision and the "
                "latency targets (SLO).",
            ),
        )
    )
    number = (
        '<label>{label} <input name="{name}" type="number" min="{least}" step="any" value="{value}"></label>'
    )
    latency_inputs = (
        '<fieldset class="live-latency-inputs"><legend>Serving latency '
        "(<code>lab-utils latency</code>)</legend>"
        f'<label>Load <select name="load">{_options(LOADS, START["load"])}</select></label>'
        + number.format(
            label="Requests a second, or in flight", name="load_value", least=0, value=START["load_value"]
        )
        + number.format(label="Prompt (tokens)", name="prompt_len", least=1, value=START["prompt_len"])
        + number.format(label="Output (tokens)", name="output_len", least=1, value=START["output_len"])
        + f'<label>Precision <select name="precision">{_options(serving.PRECISIONS, START["precision"])}'
        "</select></label>"
        + number.format(
            label="TTFT target (ms)",
            name="slo_ttft_ms",
            least=0,
            value=_slo_ms("slo_ttft_s"),
        )
        + number.format(
            label="TPOT target (ms)",
            name="slo_tpot_ms",
            least=0,
            value=_slo_ms("slo_tpot_s"),
        )
        + "</fieldset>"
    )
    return (
        '<div class="live-calculators" data-state="loading">'
        '<form class="live-inputs" onsubmit="return false">'
        f'<label>Model <select name="model">{_options(models, START["model"])}</select></label>'
        f'<label>GPU <select name="gpu">{_options(gpus, START["gpu"])}</select></label>'
        f'<label>Method <select name="method">{_options(METHODS, START["method"])}</select></label>'
        '<label>Sequence length (tokens) <input name="seq_len" type="number" min="1" step="1" '
        f'value="{seq_len}"></label>'
        '<label>Training tokens <input name="tokens" type="text" inputmode="decimal" '
        f'value="{START["tokens"]}"></label>'
        '<label>Requests per day <input name="requests_per_day" type="number" min="1" '
        f'value="{START["requests_per_day"]}">'
        "</label>"
        '<label class="live-own-model">Your own model: paste its <code>config.json</code> (Hugging Face) '
        "or drop the file here; every answer is then for it (empty: the model chosen above)"
        '<textarea name="config" rows="3" spellcheck="false" placeholder="{&quot;model_type&quot;: ...}">'
        "</textarea></label>"
        f"{latency_inputs}</form>"
        '<p class="live-status" role="status">Loading Python in this page '
        f"({download_bytes(root) / 1e6:.0f} MB, "
        "once; nothing is sent anywhere). The commands below follow your choices already; "
        "their answers appear when it has loaded.</p>"
        f"{sections}"
        "<noscript><p>These calculators need JavaScript. The same answers come from the "
        "<code>lab-utils</code> command shown above each one.</p></noscript></div>"
    )


class LiveCalculators(SphinxDirective):
    """``{live-calculators}``: the form and answer areas of the live calculators."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        return [nodes.raw("", form_html(Path(self.env.srcdir)), format="html")]


def add_page_script(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Load the calculators' script and style on the pages that show them."""
    if 'class="live-calculators"' in context.get("body", ""):
        # inline with the page's meta tags, before its stylesheets (a script after them waits for
        # them): Python's worker starts before the rest of the page is fetched and parsed
        start = (HERE / "live_static" / "live-start.js").read_text(encoding="utf-8")
        packages = Path(app.srcdir) / GENERATED / "live" / "packages.json"
        for name, path in (
            ("__WORKER__", HERE / "live_static" / "live-worker.js"),
            ("__PACKAGES__", packages),
        ):
            start = start.replace(name, hashlib.sha256(path.read_bytes()).hexdigest()[:16])
        context["metatags"] = context.get("metatags", "") + f"\n<script>{start}</script>"
        app.add_js_file("live-figures.js", loading_method="defer")
        app.add_js_file("live-calculators.js", loading_method="defer")
        app.add_css_file("live-calculators.css")


def setup(app: Sphinx) -> None:
    app.add_directive("live-calculators", LiveCalculators)
    app.connect("config-inited", add_static_path)
    app.connect("builder-inited", build_packages)
    app.connect("html-page-context", add_page_script)
