"""Compiled Python (``.pyc``) for the live calculators' wheels, made by the page's own Pyodide.

Pyodide's Python is not this machine's (3.14 in the browser), so its bytecode is made by running
the vendored Pyodide in Node.js at build time: every ``.py`` of a wheel is compiled there with
``py_compile`` into ``__pycache__/NAME.<cache tag>.pyc``, as *unchecked-hash* files (the import
system uses them without comparing the source's time, which unpacking a wheel does not keep).
The page then imports the course without compiling its sources first, which the first answer
waits on. Without Node.js (or with a Pyodide that fails there) the wheels stay as they were:
the page works the same, only its first answer is slower.

Used by live_calculators.build_packages.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

# Node.js: the vendored Pyodide compiles every source it is given (JSON {path: text} on stdin)
# and prints JSON {"pyc": {path of the .pyc: base64}}.
_COMPILE_JS = r"""
const { loadPyodide } = await import(process.argv[1]);
const pyodide = await loadPyodide({ indexURL: process.argv[2] });
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
pyodide.globals.set("_sources", Buffer.concat(chunks).toString("utf8"));
process.stdout.write(pyodide.runPython(`
import base64, importlib.util, json, os, py_compile
compiled = {}
for name, text in json.loads(_sources).items():
    source = os.path.join("/tmp/live-pyc", name)
    os.makedirs(os.path.dirname(source), exist_ok=True)
    with open(source, "w", encoding="utf-8") as file:
        file.write(text)
    target = py_compile.compile(source, cfile="/tmp/live-pyc.pyc", dfile=name,
                                doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    with open(target, "rb") as file:
        compiled[importlib.util.cache_from_source(name)] = base64.b64encode(file.read()).decode()
json.dumps({"pyc": compiled})
`));
"""


def in_node(script: str, pyodide: Path, stdin_text: str) -> str | None:
    """``script`` (an ES module; its ``process.argv[1]`` is the vendored ``pyodide.mjs``, its
    ``process.argv[2]`` Pyodide's folder) run by Node.js with ``stdin_text`` on its standard
    input: what it printed, or None when Node.js is missing or the script failed."""
    node = shutil.which("node")
    if node is None:
        return None
    result = subprocess.run(
        [node, "--input-type=module", "-e", script, "--", (pyodide / "pyodide.mjs").as_uri(), f"{pyodide}/"],
        input=stdin_text,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result.stdout if result.returncode == 0 else None


def compiled_by_pyodide(sources: dict[str, str], pyodide: Path) -> dict[str, bytes] | None:
    """``sources`` ({path in the wheel: text}) compiled by the Pyodide in ``pyodide``: {path of
    the .pyc: its bytes}, or None when Node.js is missing or the compile failed."""
    printed = in_node(_COMPILE_JS, pyodide, json.dumps(sources))
    if printed is None:
        return None
    return {path: base64.b64decode(data) for path, data in json.loads(printed)["pyc"].items()}


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def add_pyc(wheels: list[Path], pyodide: Path) -> int:
    """Add the Pyodide-compiled ``.pyc`` of every ``.py`` in ``wheels`` to them (and to their
    RECORD), compiled in one run of Node.js; the number added (0: the wheels left as they were)."""
    contents = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            contents[wheel] = [(info, archive.read(info)) for info in archive.infolist()]
    sources = {
        info.filename: data.decode("utf-8")
        for entries in contents.values()
        for info, data in entries
        if info.filename.endswith(".py")
    }
    compiled = compiled_by_pyodide(sources, pyodide) if sources else None
    if not compiled:
        return 0
    for wheel, entries in contents.items():
        names = {info.filename for info, _ in entries}
        ours = {path: pyc for path, pyc in sorted(compiled.items()) if _source_of(path) in names}
        with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for info, data in entries:
                if info.filename.endswith(".dist-info/RECORD"):
                    lines = data.decode("utf-8").rstrip("\n").split("\n")
                    lines[-1:-1] = [_record_line(path, pyc) for path, pyc in ours.items()]
                    data = ("\n".join(lines) + "\n").encode("utf-8")
                archive.writestr(info, data)
            for path, pyc in ours.items():
                archive.writestr(
                    zipfile.ZipInfo(path, (2026, 1, 1, 0, 0, 0)), pyc, compress_type=zipfile.ZIP_DEFLATED
                )
    return len(compiled)


def _source_of(pyc_path: str) -> str:
    """``a/__pycache__/b.cpython-314.pyc`` -> ``a/b.py`` (importlib.util.source_from_cache's rule)."""
    folder, _, name = pyc_path.rpartition("/__pycache__/")
    return f"{folder}/{name.split('.', 1)[0]}.py"
