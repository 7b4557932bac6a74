"""Give each course notebook the metadata Google Colab reads when it opens the notebook.

    python scripts/colab_metadata.py                  # every notebook in notebooks/
    python scripts/colab_metadata.py notebooks/03_vram_limits.ipynb
    python scripts/colab_metadata.py --check          # exit 1 if a notebook needs updating

A notebook that benefits from a GPU asks for one: ``"accelerator": "GPU"`` and
``"colab": {"gpuType": "T4", "provenance": []}`` (the free tier's GPU), so "Open in Colab"
starts a T4 runtime when one is available; the others get ``"colab": {"provenance": []}`` and
no accelerator. Other keys Colab may have written under "colab" are kept; ``provenance`` (the
editing history of whoever saved it last) is emptied. Only the notebook metadata changes, and a
notebook already right is not rewritten, so running it twice changes nothing.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
COLAB_GPU_TYPE = "T4"  # the GPU of Colab's free tier

# The one list to edit when a notebook is added: does it measure more, or more usefully, on a GPU?
GPU_NOTEBOOKS = {
    "00": "the machine report and a first matrix product measured on the GPU too",
    "01": "the size at which a GPU starts to beat the CPU, measured",
    "02": "matrix products and host-to-GPU copies timed on the GPU, a real GPU point on the roofline",
    "03": "a training step's memory measured part by part on the GPU",
    "04": "the worker's cold start with a real CUDA context",
    "05": "the fine-tuning runs and the matrix-product rate measured on the GPU",
    "06": "the GPU side of each CPU-versus-GPU comparison, measured",
    "07": "a single rank training on the GPU with NCCL (exercise 1)",
    "09": "GPU kernel times in the profile, fp16/bf16 autocast, pinned-memory loading and CUDA graphs",
    "11": "the tiny GPT's continuous-batching loop measured on the GPU",
    "12": "a tiny GPT measured with its last blocks on the GPU and the rest on the CPU",
}
CPU_NOTEBOOKS: dict[str, str] = {  # number -> why a GPU adds nothing there
    "08": "pure arithmetic and small simulations: a GPU adds nothing",
    "10": "two gloo ranks on the CPU: one Colab GPU cannot host two NCCL ranks",
}

_NUMBER = re.compile(r"^(\d\d)_")


def wants_gpu(path: Path) -> bool:
    """Whether the notebook at ``path`` is listed in GPU_NOTEBOOKS; ValueError if in neither list."""
    match = _NUMBER.match(Path(path).name)
    if match is None:
        raise ValueError(f"path={str(path)!r}: a course notebook is named NN_topic.ipynb")
    number = match.group(1)
    if number in GPU_NOTEBOOKS:
        return True
    if number in CPU_NOTEBOOKS:
        return False
    raise ValueError(
        f"notebook {number} ({Path(path).name}) is in neither GPU_NOTEBOOKS nor CPU_NOTEBOOKS "
        f"of {Path(__file__).name}: add it to one of them"
    )


def expected_metadata(metadata: dict, gpu: bool) -> dict:
    """``metadata`` with the Colab keys set for a GPU (``gpu=True``) or a CPU notebook."""
    result = {key: value for key, value in metadata.items() if key != "accelerator"}
    colab = {key: value for key, value in metadata.get("colab", {}).items() if key != "gpuType"}
    colab["provenance"] = []
    if gpu:
        colab["gpuType"] = COLAB_GPU_TYPE
        result["accelerator"] = "GPU"
    result["colab"] = colab
    return result


def apply(path: Path, write: bool = True) -> bool:
    """Set the Colab metadata of the notebook at ``path``; returns whether it had to change."""
    notebook = nbformat.read(path, as_version=4)
    wanted = expected_metadata(dict(notebook.metadata), wants_gpu(path))
    if wanted == notebook.metadata:
        return False
    if write:
        notebook.metadata = nbformat.from_dict(wanted)
        nbformat.write(notebook, path)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebooks/NN_*.ipynb")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if any notebook would change"
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    changed = []
    for path in paths:
        try:
            if apply(path, write=not args.check):
                changed.append(path)
        except ValueError as error:
            parser.error(str(error))
    verb = "would change" if args.check else "updated"
    for path in changed:
        print(f"{verb}: {path} ({'GPU ' + COLAB_GPU_TYPE if wants_gpu(path) else 'CPU'})")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
