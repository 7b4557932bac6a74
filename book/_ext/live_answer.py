"""The live calculators' Python, run in the reader's browser: its text is given to the page in
``packages.json`` (live_calculators.build_packages). It runs twice in the life of a build:

- at build time, in the vendored Pyodide under Node.js, before Python's memory is kept as the
  page's snapshot (live_snapshot.py), so the page restores it with these functions defined;
- in the page's Web Worker (live-worker.js) when there is no snapshot to restore.

The worker calls the two functions by name, strings in and strings out: no JavaScript object
ever holds a Python one, which is what lets Pyodide keep and restore Python's memory whole.
"""

import contextlib
import io
import json
import os

from lab_utils import cli


def answer(argv_json: str) -> str:
    """``lab-utils ARGV`` run once (``argv_json``: the arguments as a JSON list): JSON with its
    exit status, output, error output and ``--json`` answer (None when it has none)."""
    out, err, answers = io.StringIO(), io.StringIO(), []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(json.loads(argv_json), json_answer=answers.append)
        except SystemExit as stop:
            status = stop.code
    json_answer = answers[0] if answers and status == 0 else None
    return json.dumps(
        {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue(), "json": json_answer}
    )


def write_config(text: str) -> str:
    """The reader's config.json written in the working folder (removed when ``text`` is empty);
    its path, for ``--model``."""
    if text:
        with open("config.json", "w", encoding="utf-8") as file:
            file.write(text)
    elif os.path.exists("config.json"):
        os.remove("config.json")
    return "config.json"
