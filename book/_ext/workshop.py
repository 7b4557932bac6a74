"""The workshop's settings (``workshop.toml`` at the repository root), filled into the pages.

A page writes ``{{ workshop.NAME }}`` (in prose, links or code blocks alike); Sphinx's
``source-read`` replaces it with the setting, or with its fallback when the setting is empty,
before MyST parses the page. An unknown NAME stops the build with a message naming it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

SETTINGS_FILE = "workshop.toml"
TOKEN = re.compile(r"\{\{\s*workshop\.(\w+)\s*\}\}")
FALLBACKS = {  # what a page says when a setting is left empty
    "website_url": "this website",
    "contact": "your instructor (the address in the workshop's invitation)",
    "dates": "the dates in the workshop's invitation",
    "check_deadline": "three days before the workshop",
    "shared_folder": "the shared folder whose link is on the first slide (or by e-mail to your instructor)",
    "notes_document": "the shared notes document whose link is on the first slide",
    "code_of_conduct": "the code of conduct named in the workshop's invitation",
}
REQUIRED = ("repository_url", "branch", "start")


def read(root: Path) -> dict[str, str]:
    """The settings of ``root/workshop.toml``, every value a string; ValueError naming a missing one."""
    with open(Path(root) / SETTINGS_FILE, "rb") as file:
        settings = {name: str(value).strip() for name, value in tomllib.load(file).items()}
    missing = [name for name in (*REQUIRED, *FALLBACKS) if name not in settings]
    empty = [name for name in REQUIRED if name in settings and not settings[name]]
    if missing or empty:
        raise ValueError(f"{SETTINGS_FILE}: set {', '.join(missing + empty)}")
    if not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", settings["start"]):
        raise ValueError(
            f"{SETTINGS_FILE}: start={settings['start']!r}: write a clock time HH:MM, e.g. '09:00'"
        )
    return settings


def empty(settings: dict[str, str]) -> list[str]:
    """The settings left empty: the pages print their fallbacks until they are filled."""
    return [name for name, text in settings.items() if not text]


def value(settings: dict[str, str], name: str) -> str:
    """A setting, or its fallback when empty; KeyError for a name the file does not have."""
    return settings[name] or FALLBACKS.get(name, "")


def fill(text: str, settings: dict[str, str]) -> str:
    """``text`` with every ``{{ workshop.NAME }}`` replaced; ValueError naming unknown names."""
    unknown = sorted({name for name in TOKEN.findall(text) if name not in settings})
    if unknown:
        raise ValueError(
            f"{{{{ workshop.{unknown[0]} }}}}: {SETTINGS_FILE} has no setting {unknown[0]!r} "
            f"(it has {', '.join(settings)})"
        )
    return TOKEN.sub(lambda match: value(settings, match[1]), text)


def fill_source(app, docname: str, source: list[str]) -> None:
    """Sphinx ``source-read``: fill the settings into a Markdown page."""
    if Path(app.env.doc2path(docname)).suffix == ".md" and TOKEN.search(source[0]):
        source[0] = fill(source[0], read(Path(app.srcdir)))
