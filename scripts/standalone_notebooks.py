"""Run each notebook alone, as Colab opens it: copied into an empty folder, in a virtual
environment that has torch, numpy, matplotlib and ipywidgets 7.7 (as Colab ships them) but not
lab_utils, with the setup cell's COURSE_REPOSITORY pointing at this clone.

Usage: python scripts/standalone_notebooks.py [--venv DIR] [--repository URL_OR_FOLDER] [NOTEBOOK ...]
       python scripts/standalone_notebooks.py --setup-cell [--venv DIR] [--repository URL_OR_FOLDER]
(`make test-standalone`: every notebook in notebooks/ when none is named; `make test-colab`:
--setup-cell)

Passes when every cell of every notebook runs without error and the preinstalled torch and
ipywidgets are the same versions afterwards. With --setup-cell, only the setup cell (the same in
every notebook: tests/test_notebooks.py) runs, once, followed by a check that lab_utils was
installed (not read from the clone) and that every file a notebook asks
``course_files.path("...")`` for resolves from the installed package. The environment is made
once (in --venv) and put back to its preinstalled packages before each notebook, so each starts
without lab_utils.
--repository defaults to this folder (the working tree, committed or not); a git URL such as
file:///path/to/clone tests the committed state the way Colab installs it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What a Colab runtime has before the setup cell runs (ipywidgets 7.7: Colab's own; a current pip,
# which reads "name @ git+file:///..." as Colab's reads git+https), plus the Jupyter kernel and
# nbclient that execute the notebook. torch==2.13.0: the course's tested pin. ipykernel<7, as
# Colab runs (constraints.txt pins 6.x likewise).
PREINSTALLED = (
    "pip>=24.1",
    "torch==2.13.0",
    "numpy",
    "matplotlib",
    "ipywidgets==7.7.1",
    "ipykernel<7",
    "nbclient",
    "nbformat",
)
KEPT = ("torch", "ipywidgets")  # must keep their versions through every notebook
COURSE_FILE = re.compile(r'course_files\.path\(\s*\\?"([^"\\]+)\\?"\s*\)')  # in a notebook's JSON

# Runs after the setup cell: the installed package, not the clone, serves every file a notebook needs.
CHECK_INSTALLED = """
import pathlib, sys, lab_utils
from lab_utils import course_files
package = pathlib.Path(lab_utils.__file__).resolve().parent
assert pathlib.Path(sys.prefix).resolve() in package.parents, (
    f"lab_utils was imported from {{package}}, not installed"
)
missing = []
for name in {names!r}:
    try:
        print(name, "->", course_files.path(name))
    except ValueError as error:
        missing.append(str(error))
assert not missing, "files the notebooks need are not in the installed package: " + "; ".join(missing)
print("lab_utils installed at", package)
"""

# Runs inside the environment: execute one notebook in its folder, every cell, no errors allowed
# (after book/_ext/shell_poll.py, which keeps nbclient from missing a kernel's reply).
EXECUTE = (
    (ROOT / "book" / "_ext" / "shell_poll.py").read_text(encoding="utf-8")
    + """
install()
import sys, nbformat
from nbclient import NotebookClient
path = sys.argv[1]
notebook = nbformat.read(path, as_version=4)
NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}},
               shutdown_kernel="immediate").execute()  # as scripts/run_notebooks.py
"""
)


def pip(python: Path, *args: str, capture: bool = False) -> str:
    done = subprocess.run(
        [str(python), "-m", "pip", *args], check=True, text=True, stdout=subprocess.PIPE if capture else None
    )
    return done.stdout or ""


def installed(python: Path) -> dict[str, str]:
    """{distribution name (lower case): version} in the environment of ``python``."""
    listing = json.loads(pip(python, "list", "--format", "json", capture=True))
    return {item["name"].lower(): item["version"] for item in listing}


def make_environment(folder: Path) -> Path:
    """The environment in ``folder`` (made and filled once), its python returned."""
    python = folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    marker = folder / "preinstalled.json"
    if not marker.exists() or json.loads(marker.read_text())["asked"] != list(PREINSTALLED):
        shutil.rmtree(folder, ignore_errors=True)
        venv.EnvBuilder(with_pip=True).create(folder)
        pip(python, "install", "--quiet", *PREINSTALLED)
        marker.write_text(json.dumps({"asked": list(PREINSTALLED), "installed": installed(python)}))
    return python


def restore(python: Path, baseline: dict[str, str]) -> None:
    """Uninstall what a previous notebook installed (lab_utils, the Runpod SDK, ...)."""
    extra = sorted(set(installed(python)) - set(baseline))
    if extra:
        pip(python, "uninstall", "--quiet", "--yes", *extra)


def run_alone(python: Path, notebook: Path, repository: str) -> tuple[bool, float, str]:
    """(passed, seconds, the error's last lines) for ``notebook`` run alone in an empty folder."""
    with tempfile.TemporaryDirectory(prefix="standalone-") as folder:
        copy = Path(folder) / notebook.name
        shutil.copy(notebook, copy)
        env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env.update(COURSE_REPOSITORY=repository, MPLBACKEND="agg")
        started_s = time.perf_counter()
        done = subprocess.run(
            [str(python), "-c", EXECUTE, str(copy), folder],
            env=env,
            cwd=folder,
            capture_output=True,
            text=True,
        )
        return done.returncode == 0, time.perf_counter() - started_s, done.stderr[-3000:]


def setup_cell_notebook(notebooks: list[Path], folder: Path) -> Path:
    """A notebook of the notebooks' setup cell and CHECK_INSTALLED, written into ``folder``."""
    import nbformat

    first = nbformat.read(notebooks[0], as_version=4)
    setup = next(cell.source for cell in first.cells if cell.cell_type == "code")
    names = sorted(
        {name for path in notebooks for name in COURSE_FILE.findall(path.read_text(encoding="utf-8"))}
    )
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(setup),
            nbformat.v4.new_code_cell(CHECK_INSTALLED.format(names=names)),
        ]
    )
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "setup_cell.ipynb"
    nbformat.write(notebook, path)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--venv", type=Path, default=ROOT / "_build" / "standalone-venv")
    parser.add_argument("--repository", default=str(ROOT))
    parser.add_argument(
        "--setup-cell",
        action="store_true",
        help="run only the shared setup cell, once, and check what it installed",
    )
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    scratch = tempfile.TemporaryDirectory(prefix="setup-cell-")
    if args.setup_cell:
        notebooks = [setup_cell_notebook(notebooks, Path(scratch.name))]

    started_s = time.perf_counter()
    python = make_environment(args.venv.resolve())
    baseline = json.loads((args.venv / "preinstalled.json").read_text())["installed"]
    print("preinstalled:", ", ".join(f"{name} {baseline[name]}" for name in KEPT))
    failed = []
    for notebook in notebooks:
        restore(python, baseline)
        passed, seconds, error = run_alone(python, notebook.resolve(), args.repository)
        now = installed(python)
        changed = [
            f"{name} {baseline[name]} -> {now.get(name)}" for name in KEPT if now.get(name) != baseline[name]
        ]
        print(
            f"{notebook.name}: {'passed' if passed and not changed else 'FAILED'} in {seconds:.0f} s"
            + (f"; changed {', '.join(changed)}" if changed else ""),
            flush=True,
        )
        if not passed:
            print(error)
        if not passed or changed:
            failed.append(notebook.name)
    restore(python, baseline)
    scratch.cleanup()
    print(
        f"{len(notebooks) - len(failed)} of {len(notebooks)} notebooks ran alone in "
        f"{time.perf_counter() - started_s:.0f} s; kept "
        + ", ".join(f"{name} {baseline[name]}" for name in KEPT)
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
