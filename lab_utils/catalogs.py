"""One loader for the data files in ``lab_utils/data/``: the hardware catalog, the LLM shapes,
the prices and the assumptions. Every record of a catalog must name its source and the date of
its figures (YYYY-MM, or YYYY where the source gives only a year); a record that does not is an
error naming the file, the record and the key. Standard library only.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from lab_utils import lookup

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = ["DATE", "index", "load", "parse", "read", "text"]

DATE = re.compile(r"^\d{4}(-(0[1-9]|1[0-2]))?$")
"""A source date: YYYY-MM, or YYYY where the source gives only a year."""


def parse(text: str, table: str, origin: str, *, date_key: str = "source_date") -> tuple[dict, ...]:
    """The ``[[table]]`` records of TOML ``text``, each checked for a non-empty ``name`` and
    ``source`` and a date under ``date_key`` (YYYY-MM or YYYY: a record without one is refused).
    ValueError names ``origin``, the record and what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{origin} is not valid TOML: {exc}") from exc
    records = data.get(table)
    if not isinstance(records, list) or not records:
        raise ValueError(f"{origin} must hold at least one [[{table}]] table")
    for number, record in enumerate(records, start=1):
        where = f"{origin}: [[{table}]] #{number}"
        if not isinstance(record, dict):
            raise ValueError(f"{where} must be a table, got {record!r}")
        if isinstance(record.get("name"), str):
            where += f" ({record['name']!r})"
        for key in ("name", "source", date_key):
            if key not in record:
                raise ValueError(f"{where} lacks required key(s): {key}")
            if not isinstance(record[key], str) or not record[key].strip():
                raise ValueError(f"{where}: {key} must be a non-empty string, got {record[key]!r}")
        date = record[date_key]
        if not DATE.match(date):
            raise ValueError(f"{where}: {date_key} must be YYYY-MM or YYYY, got {date!r}")
    return tuple(records)


@functools.cache
def read(filename: str) -> dict:
    """The parsed TOML of ``lab_utils/data/<filename>``, read once."""
    try:
        return tomllib.loads(text(filename))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"lab_utils/data/{filename} is not valid TOML: {exc}") from exc


def text(filename: str) -> str:
    """The text of ``lab_utils/data/<filename>`` (inside the installed package)."""
    return resources.files("lab_utils").joinpath("data", filename).read_text(encoding="utf-8")


def load(filename: str, table: str, **options) -> tuple[dict, ...]:
    """:func:`parse` of ``lab_utils/data/<filename>``."""
    return parse(text(filename), table, f"lab_utils/data/{filename}", **options)


def index(records, origin: str) -> dict:
    """Lookup key -> record for every name and alias of ``records`` (objects with ``name`` and
    optionally ``aliases``); ValueError when two spellings share a key."""
    found = {}
    for record in records:
        for spelling in (record.name, *getattr(record, "aliases", ())):
            key = lookup.key(spelling)
            if key in found and found[key] is not record:
                raise ValueError(
                    f"{origin}: {spelling!r} (of {record.name!r}) clashes with a name or alias "
                    f"of {found[key].name!r}; names and aliases must be unique, ignoring case, "
                    f"spaces, '-' and '_'"
                )
            found[key] = record
    return found
