"""Python's memory for the live calculators, kept at build time: the page restores it instead of
starting Python.

Started afresh, Pyodide spends most of the page's first answer starting Python itself (measured
with the browser held to half of one CPU: about 10 s of 14). So the build starts the vendored
Pyodide once in Node.js, as the page would (``_makeSnapshot``), unpacks the page's wheels, runs
live_answer.py and the page's first commands (importing the calculators and reading their
catalogs), imports the wheel's other modules, and keeps Pyodide's memory snapshot
(``makeMemorySnapshot``), gzipped, beside the wheels. The page's worker restores it
(``_loadSnapshot``) and answers at once. Without Node.js (or with a Pyodide that fails there)
there is no snapshot: the page starts Python afresh, and only its first answer is slower.

The snapshot holds the memory of one Python: its size is Pyodide's whole heap at the time
(31.5 MB for Pyodide 314.0.8). Kept without its pages of zeros (:func:`sparse`) and gzipped, it
is a quarter of that.

Used by live_calculators.build_packages.
"""

from __future__ import annotations

import gzip
import json
import struct
import tempfile
from pathlib import Path

import live_pyc

# Then every module of the wheel's lab_utils is imported too (those the first commands did not
# import: a later command need not import them either).
_IMPORT_ALL = """
import importlib, pkgutil, lab_utils
for found in pkgutil.walk_packages(lab_utils.__path__, "lab_utils."):
    if not found.name.endswith("__main__"):
        importlib.import_module(found.name)
"""
# Node.js: JSON {wheels, setup, commands, imports, snapshot} on stdin; prints JSON {"statuses": [...]},
# each command's exit status, once the snapshot is written.
_SNAPSHOT_JS = r"""
const fs = await import("node:fs");
const { loadPyodide } = await import(process.argv[1]);
const request = JSON.parse(fs.readFileSync(0, "utf8"));
const pyodide = await loadPyodide({ indexURL: process.argv[2], fullStdLib: false, _makeSnapshot: true });
for (const wheel of request.wheels) pyodide.unpackArchive(new Uint8Array(fs.readFileSync(wheel)), "wheel");
pyodide.runPython(request.setup);
const statuses = request.commands.map((argv) => {
  pyodide.globals.set("_text", JSON.stringify(argv));
  return JSON.parse(pyodide.runPython("answer(_text)")).status;
});
pyodide.runPython(request.imports);
fs.writeFileSync(request.snapshot, pyodide.makeMemorySnapshot());
process.stdout.write(JSON.stringify({ statuses }));
"""


def make_snapshot(
    wheels: list[Path], pyodide: Path, setup: str, commands: list[list[str]], target: Path
) -> bool:
    """Pyodide's memory, once ``wheels`` are unpacked, ``setup`` (live_answer.py's text) has run
    and ``commands`` have been answered, gzipped into ``target``; False (and no file) when Node.js
    is missing, Pyodide failed there or a command did not answer (exit status other than 0)."""
    with tempfile.TemporaryDirectory(prefix="live-snapshot-") as scratch:
        memory = Path(scratch) / "memory"
        request = {
            "wheels": [str(w) for w in wheels],
            "setup": setup,
            "commands": commands,
            "imports": _IMPORT_ALL,
            "snapshot": str(memory),
        }
        printed = live_pyc.in_node(_SNAPSHOT_JS, pyodide, json.dumps(request))
        if printed is None or any(json.loads(printed)["statuses"]) or not memory.is_file():
            return False
        target.write_bytes(gzip.compress(sparse(memory.read_bytes()), compresslevel=6, mtime=0))
    return True


PAGE_BYTES = 4096


def sparse(memory: bytes) -> bytes:
    """``memory`` without its pages of zeros (a third of Pyodide's heap): its length, the number
    of runs of other pages, each run's offset and length (little-endian uint32s), then the runs'
    bytes. The page (live-worker.js's ``wholeMemory``) puts the runs back into zeros: the browser
    unzips a third less."""
    runs: list[tuple[int, int]] = []
    zero_page = bytes(PAGE_BYTES)
    for offset in range(0, len(memory), PAGE_BYTES):
        if memory[offset : offset + PAGE_BYTES] == zero_page[: len(memory) - offset]:
            continue
        length = min(PAGE_BYTES, len(memory) - offset)
        if runs and sum(runs[-1]) == offset:
            runs[-1] = (runs[-1][0], runs[-1][1] + length)
        else:
            runs.append((offset, length))
    header = struct.pack(f"<{2 + 2 * len(runs)}I", len(memory), len(runs), *(n for run in runs for n in run))
    return header + b"".join(memory[offset : offset + length] for offset, length in runs)
