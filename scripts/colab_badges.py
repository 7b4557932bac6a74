"""Put an "Open in Colab" badge in each notebook's header cell and in the README's notebook list.

    python scripts/colab_badges.py            # every notebook in notebooks/, and README.md
    python scripts/colab_badges.py --check    # change nothing; exit 1 if anything would change

Each link opens that very notebook from the course repository on Colab. The address comes from
the one repository setting, ``repository:`` in _config.yml (url and branch), the one the setup
cell installs from. Beside the badge, one line says which Colab runtime to choose: a notebook
that measures on a GPU (scripts/colab_metadata.py lists them) says how to switch to a GPU.
The badge line sits right after the header's ``**Time:**`` line; the README's list sits between
two HTML comments. Running it twice changes nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lab_utils import course  # noqa: E402

_spec = importlib.util.spec_from_file_location("colab_metadata", ROOT / "scripts" / "colab_metadata.py")
colab_metadata = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(colab_metadata)

BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"
COLAB_GITHUB = "https://colab.research.google.com/github/"
BADGE = re.compile(r"\[!\[Open In Colab\]\(" + re.escape(BADGE_IMAGE) + r"\)\]\(([^)\s]+)\)")
GPU_STEP = (
    "On Colab this notebook asks for a T4 GPU; if it opens on a CPU (no GPU free), it still runs, "
    "and **Runtime > Change runtime type > T4 GPU** switches later."
)
CPU_STEP = "On Colab a CPU runtime is enough: nothing in this notebook runs on a GPU."
README_START = "<!-- notebooks: scripts/colab_badges.py writes this list -->"
README_END = "<!-- notebooks: end -->"


def repository() -> tuple[str, str]:
    """(GitHub URL, branch) of the course repository: the ``repository`` setting of _config.yml."""
    settings = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return settings["url"].removesuffix("/").removesuffix(".git"), settings.get("branch", "main")


def colab_url(notebook: Path) -> str:
    """The address that opens ``notebook`` (a path inside the repository) on Colab."""
    url, branch = repository()
    match = re.fullmatch(r"https://github\.com/([^/]+/[^/]+)", url)
    if match is None:
        raise ValueError(f"repository url={url!r}: Colab opens notebooks from https://github.com/OWNER/NAME")
    relative = notebook.resolve().relative_to(ROOT).as_posix()
    return f"{COLAB_GITHUB}{match.group(1)}/blob/{branch}/{relative}"


def badge(notebook: Path) -> str:
    """The badge's Markdown: an image link to :func:`colab_url`."""
    return f"[![Open In Colab]({BADGE_IMAGE})]({colab_url(notebook)})"


def badge_line(notebook: Path) -> str:
    """The header's badge paragraph: the badge and the runtime step for this notebook."""
    return f"{badge(notebook)} {GPU_STEP if colab_metadata.wants_gpu(notebook) else CPU_STEP}\n"


def with_badge(lines: list[str], line: str) -> list[str]:
    """Header ``lines`` (a cell's source) with ``line`` as the paragraph after the **Time:** line."""
    kept = [text for text in lines if not BADGE.search(text)]
    kept = [text for i, text in enumerate(kept) if not (text == "\n" and i > 0 and kept[i - 1] == "\n")]
    time = next((i for i, text in enumerate(kept) if text.startswith("**Time:**")), None)
    if time is None:
        raise ValueError("the header cell has no '**Time:**' line to put the badge after")
    return [*kept[: time + 1], "\n", line, *kept[time + 1 :]]


def apply(notebook: Path, write: bool = True) -> bool:
    """Set the badge of the notebook at ``notebook``; returns whether it had to change."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    header = data["cells"][0]
    lines = header["source"] if isinstance(header["source"], list) else header["source"].splitlines(True)
    wanted = with_badge(lines, badge_line(notebook))
    if wanted == header["source"]:
        return False
    if write:
        header["source"] = wanted
        notebook.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return True


def readme_list(notebooks: list[Path]) -> str:
    """The README's notebook table: number and title, minutes, the badge."""
    rows = ["| notebook | time | run it |", "|---|---|---|"]
    for path in notebooks:
        header = course.read_header(path)
        rows.append(f"| [{header.title}](notebooks/{path.name}) | {header.minutes} min | {badge(path)} |")
    return "\n".join(rows)


def apply_readme(notebooks: list[Path], write: bool = True) -> bool:
    """Write the list between README_START and README_END; returns whether it had to change."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"README.md lacks the lines {README_START!r} ... {README_END!r}")
    new = f"{text[:start]}{README_START}\n{readme_list(notebooks)}\n{text[end:]}"
    if new == text:
        return False
    if write:
        readme.write_text(new, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if anything would change"
    )
    args = parser.parse_args(argv)
    notebooks = course.notebook_paths(ROOT / "notebooks")
    changed = [path.name for path in notebooks if apply(path, write=not args.check)]
    if apply_readme(notebooks, write=not args.check):
        changed.append("README.md")
    for name in changed:
        print(f"{'would change' if args.check else 'updated'}: {name}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
