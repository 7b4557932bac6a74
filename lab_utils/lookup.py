"""Forgiving lookup by name, shared by the catalogs (hardware, LLM configurations)."""

from __future__ import annotations

import difflib
import re

_SEPARATORS = re.compile(r"[\s\-_]+")


def key(text: str) -> str:
    """Lookup key: lower case, with spaces, hyphens and underscores removed."""
    return _SEPARATORS.sub("", text).casefold()


def find(name, index: dict, what: str, known: list[str]):
    """``index[key(name)]``; else ValueError naming ``name`` and the closest (or all ``known``) names.

    ``index`` maps lookup keys to records that have a ``name``; ``what`` names the catalog.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__} {name!r}")
    found = index.get(key(name))
    if found is not None:
        return found
    close = difflib.get_close_matches(key(name), index, n=6, cutoff=0.6)
    suggestions = list(dict.fromkeys(index[k].name for k in close))
    hint = (
        "closest: " + ", ".join(map(repr, suggestions))
        if suggestions
        else "known: " + ", ".join(map(repr, known))
    )
    raise ValueError(f"name={name!r} is not in the {what}; {hint}")
