"""nbval against the one execution: a pytest plugin that validates notebooks with nbval's own
rules (``# NBVAL_CHECK_OUTPUT``, ``--nbval-lax``, the sanitize file, nbval's comparison and report),
reading each cell's outputs from the execution cache instead of running a kernel.

Usage (``make test-notebooks``, after scripts/run_notebooks.py filled the cache):
    PYTHONPATH=scripts python -m pytest -p nbval_cached --nbval-cached --nbval-lax \
        --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks

Why not nbval's own run, reused by the website: nbval executes cell by cell through its own
message loop, which keeps no widget state (the website's widgets need it) and ignores
``clear_output``; the website needs the execution Jupyter Book itself makes. So the notebooks
run once that way (scripts/run_notebooks.py) and nbval checks that run. A notebook missing from
the cache (its execution failed, or nothing ran it) fails every one of its cells here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from nbval import plugin as nbval

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import execution_cache  # noqa: E402


def pytest_addoption(parser):
    parser.getgroup("nbval").addoption(
        "--nbval-cached",
        action="store_true",
        help="compare with the notebooks' cached execution (scripts/run_notebooks.py) "
        "instead of running them",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    if config.option.nbval_cached:
        if not (config.option.nbval or config.option.nbval_lax):
            raise pytest.UsageError("--nbval-cached goes with --nbval or --nbval-lax")
        config.pluginmanager.unregister(nbval)  # its collector would start a kernel per notebook


def pytest_collect_file(file_path, parent):
    option = parent.config.option
    if option.nbval_cached and file_path.suffix == ".ipynb":
        return CachedNotebook.from_parent(parent, path=file_path)


class CachedNotebook(nbval.IPyNbFile):
    """A notebook whose cells take their outputs from the cache; no kernel."""

    executed_cells = None  # the executed code cells, in order; None when not in the cache

    def setup(self):
        from jupyter_cache import get_cache

        self.setup_sanitize_files()
        cache = get_cache(str(execution_cache.cache_folder()))
        if execution_cache.invalidate_if_stale(Path(cache.path)):
            return  # the package changed since the run: nothing in the cache counts
        try:
            record = cache.match_cache_notebook(self.nb)
        except KeyError:
            return
        executed = cache.get_cache_bundle(record.pk).nb
        self.executed_cells = [cell for cell in executed.cells if cell.cell_type == "code"]

    def teardown(self):
        pass

    def collect(self):
        for item in super().collect():
            yield CachedCell.from_parent(
                self, name=item.name, cell_num=item.cell_num, cell=item.cell, options=item.options
            )


class CachedCell(nbval.IPyNbCell):
    def runtest(self):
        if self.options["skip"]:
            pytest.skip()
        cells = self.parent.executed_cells
        if cells is None and self.cell_num > 0:
            pytest.skip("no execution of this notebook in the cache (its first cell says why)")
        if cells is None:
            self.raise_cell_error(
                "no execution of this notebook in the cache: it failed (its error is printed by "
                "scripts/run_notebooks.py) or did not run (`make test-notebooks` runs it)"
            )
        if self.options["check_exception"]:
            self.raise_cell_error("NBVAL_RAISES_EXCEPTION: the notebooks are executed with no error allowed")
        outputs = nbval.coalesce_streams([nbformat.from_dict(o) for o in cells[self.cell_num].outputs])
        self.test_outputs = outputs
        errors = [o for o in outputs if o.output_type == "error"]
        if errors:
            self.raise_cell_error("Cell execution caused an exception", "\n" + "\n".join(errors[0].traceback))
        unrun = self.cell.execution_count is None
        if unrun and self.cell.outputs:
            self.raise_cell_error("Unrun reference cell has outputs")
        if self.options["check"] and not unrun:
            if not self.compare_outputs(outputs, nbval.coalesce_streams(self.cell.outputs)):
                self.raise_cell_error("Cell outputs differ", "\n".join(self.comparison_traceback))
