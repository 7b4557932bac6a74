"""Execute notebooks and keep only the outputs that nbval checks.

Usage: python scripts/store_checked_outputs.py notebooks/NN_topic.ipynb [...]

Cells marked "# NBVAL_CHECK_OUTPUT" keep their (small, deterministic) outputs; every other
cell is committed empty, since the book executes the notebooks when it builds.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import shell_poll  # noqa: E402  (nbclient's missed replies: book/_ext/shell_poll.py)

CHECKED_MARK = "# NBVAL_CHECK_OUTPUT"


def store_checked_outputs(path: Path) -> None:
    """Run the notebook at ``path`` in its folder and rewrite it with the checked outputs only."""
    notebook = nbformat.read(path, as_version=4)
    shell_poll.install()
    NotebookClient(
        notebook, timeout=600, resources={"metadata": {"path": str(path.parent)}}, shutdown_kernel="immediate"
    ).execute()  # as scripts/run_notebooks.py
    notebook.metadata.pop("widgets", None)  # live widget state (with images): the book stores its own
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        if CHECKED_MARK in cell.source:
            cell.execution_count = 1
        else:
            cell.outputs, cell.execution_count = [], None
    nbformat.write(notebook, path)
    print(f"{path}: executed; outputs kept for {CHECKED_MARK} cells only")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for argument in sys.argv[1:]:
        store_checked_outputs(Path(argument))
