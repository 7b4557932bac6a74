"""Run pytest as two processes side by side: the tests marked ``slow`` (they start processes or
train a model for seconds, and mostly wait) in one, every other test in the other.

Usage: python scripts/parallel_pytest.py [--jobs 1|2] -- PYTEST_ARGUMENTS...
(``make test-unit``). Each process has its own temporary folder; their reports are printed one
after the other, and the exit status is the first non-zero one. ``--jobs 1`` runs one pytest.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUPS = ("slow", "not slow")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, choices=(1, 2), default=2)
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args(argv)
    started_s = time.perf_counter()
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args.pytest_args]
    if args.jobs == 1:
        return subprocess.call(command)
    with tempfile.TemporaryDirectory(prefix="unit-tests-") as scratch:
        runs = []
        for group in GROUPS:
            log = open(Path(scratch) / f"{group.replace(' ', '_')}.log", "w+", encoding="utf-8")
            basetemp = Path(scratch) / group.replace(" ", "_")
            runs.append(
                (
                    group,
                    log,
                    subprocess.Popen(
                        [*command, "-m", group, f"--basetemp={basetemp}"],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    ),
                )
            )
        codes = []
        for group, log, process in runs:
            codes.append(process.wait())
            log.seek(0)
            print(f"===== pytest -m {group!r}: exit {codes[-1]} =====\n{log.read()}", flush=True)
            log.close()
    print(f"unit tests: two pytest processes in {time.perf_counter() - started_s:.0f} s wall")
    # pytest's 5 means "no test collected", which a group may legitimately be
    return next((code for code in codes if code not in (0, 5)), 0)


if __name__ == "__main__":
    sys.exit(main())
