"""Execute every notebook once into the execution cache that the website build and nbval read.

Usage: python scripts/run_notebooks.py [--jobs N] [--alone] [NOTEBOOK ...]
(every notebooks/NN_*.ipynb when none is named)

- ``make test-notebooks`` runs it with two notebooks at a time, then nbval compares each
  ``# NBVAL_CHECK_OUTPUT`` cell with this execution (scripts/nbval_cached.py), and the strict
  website build (``make test-book``) renders the same execution without running anything again.
- ``make book`` runs it with ``--jobs 1 --alone``: a notebook last executed beside another is
  executed again, alone, so the timings the website prints were measured on a machine to itself.

A notebook is executed the way Jupyter Book executes it (jupyter-cache's single_nb_execution:
nbclient in the notebook's folder, the cell timeout of _config.yml, no error allowed) and
stored only when every cell ran. A notebook whose code, or whose course key (the package,
pyproject.toml, constraints.txt: book/_ext/execution_cache.py), is unchanged since its last
execution is taken from the cache. Exit status 1 when a notebook failed; its error is printed.
Each notebook's time is printed, with the course's targets (all within 100 s, each within 20 s).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import execution_cache  # noqa: E402  (book/_ext, shared with the website build)
import shell_poll  # noqa: E402  (book/_ext: nbclient's missed replies)
from notebook_times import COURSE_TARGET_S, NOTEBOOK_TARGET_S  # noqa: E402  (the build-status page's targets)


def execute(path: str, timeout_s: int) -> tuple[str, float, str | None]:
    """(the executed notebook as JSON, seconds, the error or None): runs in a worker process."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    shell_poll.install()
    notebook = nbformat.read(path, as_version=4)
    # The kernel is stopped at once after the last cell (SIGKILL to its process group), as a learner
    # closes a notebook without waiting: a graceful shutdown let Python finalize torch first, 1.0-1.9 s
    # per notebook here, counted in the notebook's time. Nothing is lost: every cell has finished.
    result = single_nb_execution(
        notebook,
        cwd=str(Path(path).parent),
        timeout=timeout_s,
        allow_errors=False,
        meta_override=True,
        shutdown_kernel="immediate",
    )
    return nbformat.writes(result.nb), result.time, result.exc_string


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="notebooks executed at once (default: 2, or 1 on a 1-core machine)",
    )
    parser.add_argument(
        "--alone",
        action="store_true",
        help="execute again every notebook whose cached run shared the machine with another",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be 1 or more, got {args.jobs}")
    if args.alone and args.jobs != 1:
        parser.error("--alone needs --jobs 1")

    import nbformat
    import yaml
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    notebooks = [p.resolve() for p in args.notebooks] or sorted(
        (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
    )
    folder = execution_cache.cache_folder(ROOT)
    if execution_cache.invalidate_if_stale(folder, ROOT):
        print(
            f"{folder.relative_to(ROOT)}: the package, pyproject.toml or constraints.txt changed; "
            "cache emptied"
        )
    cache = get_cache(str(folder))
    timeout_s = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["execute"]["timeout"]

    seconds, todo = {}, []
    for path in notebooks:
        try:
            record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            todo.append(path)
            continue
        if args.alone and record.data.get("jobs", 1) != 1:
            cache.remove_cache(record.pk)
            todo.append(path)
            continue
        seconds[path.name] = record.data.get("execution_seconds", 0.0)
        print(f"{path.name}: from the cache ({seconds[path.name]:.1f} s when executed)", flush=True)

    jobs = min(args.jobs, len(todo)) or 1
    failed = []
    started_s = time.perf_counter()
    # Workers are spawned: a fresh interpreter each, nothing inherited from this one.
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {pool.submit(execute, str(path), timeout_s): path for path in todo}
        for future in as_completed(running):
            path = running[future]
            executed, run_s, error = future.result()
            if error:
                failed.append(path.name)
                print(f"{path.name}: FAILED after {run_s:.1f} s\n{error}", flush=True)
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(
                    nbformat.reads(executed, as_version=4),
                    str(path),
                    data={"execution_seconds": run_s, "jobs": jobs},
                ),
                check_validity=False,
                overwrite=True,
            )
            seconds[path.name] = run_s
            print(
                f"{path.name}: executed in {run_s:.1f} s" + (f" ({jobs} at a time)" if jobs > 1 else ""),
                flush=True,
            )
    if todo:
        print(
            f"executed {len(todo)} notebook(s), {jobs} at a time, "
            f"in {time.perf_counter() - started_s:.0f} s wall"
        )

    slow = sorted(name for name, s in seconds.items() if s > NOTEBOOK_TARGET_S)
    print(
        f"notebooks: {sum(seconds.values()):.0f} s in all "
        f"(course target {COURSE_TARGET_S} s, one at a time); "
        + (f"over {NOTEBOOK_TARGET_S} s: {', '.join(slow)}" if slow else f"each within {NOTEBOOK_TARGET_S} s")
    )
    if failed:
        print(f"FAILED: {', '.join(failed)} (the error is printed above)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
