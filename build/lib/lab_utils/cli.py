"""The ``lab-utils`` command line: the course's helpers without opening a notebook."""

from __future__ import annotations

import argparse
import sys

import lab_utils


def _doctor(args: argparse.Namespace) -> int:
    """Print the machine report that every notebook prints after its setup cell."""
    from lab_utils import machine

    print(machine.describe())
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per task."""
    parser = argparse.ArgumentParser(
        prog="lab-utils",
        description="Helpers for the course 'CPU vs GPU for AI'.",
        epilog="example: lab-utils doctor",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {lab_utils.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    doctor = commands.add_parser(
        "doctor",
        help="report this machine: Python, torch, CUDA, GPU, CPU, cores, RAM, runtime",
        description="Report this machine, as the first notebook does.",
        epilog="example: lab-utils doctor",
    )
    doctor.set_defaults(run=_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; returns the exit status (2 for bad usage, from argparse)."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
