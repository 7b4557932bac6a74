"""Copy workshop.toml's repository into the files that cannot read it when they run.

Usage: python scripts/workshop_settings.py [--check | --ready]

- ``_config.yml``: ``repository: url`` and ``branch`` (the website's launch and edit buttons);
- the setup cell of ``templates/notebook.ipynb`` and of every notebook: the repository Colab
  installs the course from (a notebook opened alone on Colab has no workshop.toml beside it);
- "Open in Colab" links in the notebooks (colab.research.google.com/github/OWNER/REPO/blob/BRANCH/).

The pages read the other settings when the website is built (book/_ext/workshop.py). With
``--check`` nothing is written: the files that differ are listed and the exit status is 1.
With ``--ready`` nothing is written either: the settings still empty in workshop.toml (the
pages print a fallback for them, e.g. "your instructor") are listed, and the exit status is 1
until every one is filled: run it before the pre-workshop e-mail goes out.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import workshop  # noqa: E402

SETUP_LINE = re.compile(
    r'(COURSE_REPOSITORY = os\.environ\.get\(\\?"COURSE_REPOSITORY\\?", \\?")([^"\\]+)(\\?")'
)
COLAB_LINK = re.compile(r"(colab\.research\.google\.com/github/)[\w.-]+/[\w.-]+/blob/[\w.-]+/")
CONFIG_URL = re.compile(r"^(repository:\n(?:  .*\n)*?  url: ).*$", re.MULTILINE)
CONFIG_BRANCH = re.compile(r"^(repository:\n(?:  .*\n)*?  branch: ).*$", re.MULTILINE)


def github_path(url: str) -> str:
    """ "OWNER/REPO" of a GitHub address, for Colab links; ValueError for another host."""
    match = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)(\.git)?/?", url)
    if match is None:
        raise ValueError(
            f"repository_url={url!r}: Colab opens notebooks from GitHub: give https://github.com/OWNER/REPO"
        )
    return match[1]


def updated(path: Path, settings: dict[str, str]) -> str:
    """The text ``path`` should have under ``settings``."""
    text = path.read_text(encoding="utf-8")
    url, branch = settings["repository_url"].rstrip("/"), settings["branch"]
    if path.name == "_config.yml":
        text = CONFIG_URL.sub(lambda m: m[1] + url, text, count=1)
        return CONFIG_BRANCH.sub(lambda m: m[1] + branch, text, count=1)
    text = SETUP_LINE.sub(lambda m: m[1] + url + m[3], text)
    return COLAB_LINK.sub(lambda m: f"{m[1]}{github_path(url)}/blob/{branch}/", text)


def targets() -> list[Path]:
    return [
        ROOT / "_config.yml",
        ROOT / "templates" / "notebook.ipynb",
        *sorted((ROOT / "notebooks").glob("*.ipynb")),
    ]


def ready(settings: dict[str, str]) -> int:
    """Print the empty settings of workshop.toml; 1 while there is one, else 0."""
    missing = workshop.empty(settings)
    if missing:
        print(
            f"{len(missing)} setting(s) of {workshop.SETTINGS_FILE} still empty (the pages print a fallback):"
        )
        print("".join(f"  {name}: {workshop.FALLBACKS.get(name, '')!r}\n" for name in missing), end="")
        return 1
    print(f"every setting of {workshop.SETTINGS_FILE} is filled")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file differs")
    what.add_argument("--ready", action="store_true", help="write nothing; exit 1 while a setting is empty")
    args = parser.parse_args(argv)
    settings = workshop.read(ROOT)
    if args.ready:
        return ready(settings)
    differ = []
    for path in targets():
        text = updated(path, settings)
        if text != path.read_text(encoding="utf-8"):
            differ.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(text, encoding="utf-8")
    verb = "differ from workshop.toml" if args.check else "updated from workshop.toml"
    print(f"{len(differ)} file(s) {verb}" + "".join(f"\n  {path}" for path in differ))
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
