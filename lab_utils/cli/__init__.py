"""The ``lab-utils`` command line: the course's helpers without opening a notebook.

One module per sub-command, ``lab_utils/cli/<command>.py``, beside ``common.py`` (the parser,
the argparse types that check numbers and catalog names while parsing, :class:`UsageError`, the
printing of tables and assumptions). To add a command:

1. Write ``lab_utils/cli/<command>.py`` (a face: it asks the calculators and prints; it imports
   torch, if at all, inside its handler) with a ``register(subparsers)`` function that adds the
   command's parser with ``common.add_command(subparsers, name, handler, help=..., examples=...)``
   (that sets the handler: ``handler(args)`` returns the exit status) and then its options.
2. Add one line, the module's name, to :data:`COMMANDS` below, where it should appear in --help.

Tests and the website need nothing more: ``tests/test_layers.py`` puts every module of this
package in the faces layer, and setuptools ships the package whole.

Bad usage or input (argparse's own checks, the ``checks`` and catalog lookups run while parsing,
or a :class:`UsageError`) prints one line on stderr and exits with status 2. Any other exception
is a bug in lab-utils: its traceback, a line saying so, exit status 1. Answers end with the
assumptions they took (``lab_utils.assumptions``), each with the option that overrides it.
``memory``, ``cost`` and ``hardware`` import no torch.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import traceback
from importlib import import_module

import lab_utils
from lab_utils.cli.bench import JSON_FORMAT, JSON_VERSION, measured_roof
from lab_utils.cli.common import Parser, UsageError, formatter, usage_error
from lab_utils.cli.compare import class_entry, load_result
from lab_utils.cli.doctor import (
    DISTRIBUTION,
    MIN_FREE_DISK_BYTES,
    MIN_RAM_BYTES,
    Finding,
    course_version,
    doctor_findings,
    nvidia_gpu_present,
)

__all__ = [
    "COMMANDS",
    "DISTRIBUTION",
    "JSON_FORMAT",
    "JSON_VERSION",
    "MIN_FREE_DISK_BYTES",
    "MIN_RAM_BYTES",
    "Finding",
    "UsageError",
    "build_parser",
    "class_entry",
    "course_version",
    "doctor_findings",
    "load_result",
    "main",
    "measured_roof",
    "nvidia_gpu_present",
]

COMMANDS = (
    "doctor",
    "bench",
    "compare",
    "hardware",
    "memory",
    "cost",
    "pick",
    "latency",
    "split",
    "offload",
)
"""The sub-commands, in --help order: each the name of a module of this package with ``register``."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per module named in :data:`COMMANDS`."""
    parser = Parser(
        prog="lab-utils",  # also `python -m lab_utils` (lab_utils/__main__.py)
        description="Helpers for the course 'CPU vs GPU for AI'.",
        epilog="examples:\n  lab-utils doctor\n  lab-utils memory --model llama-3.1-8b\n"
        "  lab-utils COMMAND --help",
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {lab_utils.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        import_module(f"{__name__}.{name}").register(commands)
    return parser


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """:func:`build_parser`'s parser, made once a process: ``main`` runs many times in one process
    in the website's worker, the notebooks and the tests, and making the parser (some 260
    arguments) was most of a quick command's time there (``memory``: 2.4 of 2.9 ms natively, about
    9 of 9-13 ms in Pyodide). Parsing leaves it as it was."""
    return build_parser()


def main(argv: list[str] | None = None, *, json_answer=None) -> int:
    """Run one sub-command; returns the exit status. Bad usage or input: one line on stderr,
    status 2. Anything else is a bug: its traceback, a line saying so, status 1.
    ``json_answer``: a function given the text ``--json`` would print, called by ``memory``,
    ``cost`` and ``pick`` as they print their tables (one run, both answers: the website)."""
    parser = _parser()
    args = parser.parse_args(argv)
    args.json_answer = json_answer
    command = " ".join(
        str(part)
        for part in (args.command, getattr(args, "cost", None) or getattr(args, "job", None))
        if part
    )
    try:
        return args.run(args)
    except UsageError as error:
        usage_error(parser, f"{command}: {error} (see lab-utils {command} --help)")
    except KeyboardInterrupt:
        parser.exit(130, "\ninterrupted\n")
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit flush quiet
        return 0
    except Exception:  # noqa: BLE001 - everything else is ours to fix
        traceback.print_exc()
        print(
            f"this is a bug in lab-utils {lab_utils.__version__}: please report it with the command you ran "
            "and the lines above",
            file=sys.stderr,
        )
        return 1
