"""The helpers every command shares: the parser, one-line usage errors, the argparse
types that check numbers and catalog names while parsing, and the printing of tables and
assumptions.
"""

from __future__ import annotations

import argparse
import json


class UsageError(Exception):
    """Bad usage found after parsing; the message names the argument and what is allowed."""


def usage_error(parser: argparse.ArgumentParser, message: str):
    """One line on stderr, exit status 2 (argparse's convention for bad usage)."""
    parser.exit(2, f"{parser.prog}: error: {' '.join(str(message).split())}\n")


class Parser(argparse.ArgumentParser):
    """argparse with bad usage on one line: which argument, what is allowed, where help is."""

    def error(self, message: str):
        usage_error(self, f"{message} (see {self.prog} --help)")


def formatter(prog: str) -> argparse.HelpFormatter:
    """Help as written (the examples keep their lines), options aligned a little further in."""
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def add_command(commands, name: str, run, *, help: str, examples: str):  # noqa: A002 - argparse's name
    """Add the sub-command ``name`` to ``commands`` (an argparse subparsers object) and return its
    parser; ``run(args)`` handles it and returns the exit status. ``help`` is its one line in
    --help, ``examples`` the lines of its epilog."""
    parser = commands.add_parser(
        name,
        help=help,
        description=help[0].upper() + help[1:] + ".",
        epilog="examples:\n" + examples,
        formatter_class=formatter,
    )
    parser.set_defaults(run=run)
    return parser


def argument(convert, check, **limits):
    """An argparse type: ``convert`` the text (float or int), then a ``lab_utils.checks``
    function with ``limits``; argparse names the option in its one-line error."""

    def parse(text: str):
        from lab_utils import checks

        try:
            value = convert(text)
        except ValueError:
            wanted = "whole number" if convert is int else "number (write e.g. 8e9)"
            raise argparse.ArgumentTypeError(f"{text!r} is not a {wanted}") from None
        try:
            return getattr(checks, check)("value", value, **limits)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(
                f"{text!r}{str(error).removeprefix(f'value={value!r}')}"
            ) from None

    return parse


positive_float = argument(float, "number")
non_negative_float = argument(float, "number", strict=False)
positive_int = argument(int, "count")
fraction = argument(float, "number", maximum=1.0)
non_negative_int = argument(int, "count", minimum=0)


def fmt_money(dollars: float) -> str:
    """Dollars with cents, or "never" for an infinite cost."""
    return "never" if dollars == float("inf") else f"${dollars:,.2f}"


# --- inputs that name things: checked while parsing, so a bad one is a usage error ---------------


def catalog_name(lookup, what: str):
    """An argparse type: the catalog's own name for the text (``lookup(text).name``)."""

    def parse(text: str) -> str:
        try:
            return lookup(text).name
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error).replace(f"name={text!r}", repr(text), 1)) from None

    parse.__name__ = what  # argparse names the type in its messages
    return parse


def gpu_spec(text: str):
    from lab_utils import hardware

    spec = hardware.get(text)
    if spec.kind != "gpu":
        raise ValueError(f"name={text!r} is a {spec.kind}, not a GPU; see `lab-utils hardware --kind gpu`")
    return spec


def host_spec(text: str):
    from lab_utils import hardware

    spec = hardware.get(text)
    if spec.kind != "cpu":
        raise ValueError(f"name={text!r} is a {spec.kind}, not a CPU; see `lab-utils hardware --kind cpu`")
    return spec


def host_name(text: str) -> str:
    return catalog_name(host_spec, "CPU")(text)


def device_name(text: str) -> str:
    from lab_utils import hardware

    return catalog_name(hardware.get, "device")(text)


MODEL_HELP = 'a catalog model (e.g. llama-3.1-8b), a config.json path or folder, or "hf:<repo id>" (online)'


def model_name(text: str):
    """An argparse type for every --model: the ``llms.LLMConfig`` of a catalog name, a
    config.json path, a folder holding one, or hf:<repo id>, through ``llms.resolve`` (it prints
    as its name). A missing key or an unknown model_type is a usage error that names it."""
    from lab_utils import llms

    try:
        return llms.resolve(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace(f"name={text!r}", repr(text), 1)) from None


model_name.__name__ = "model"  # argparse names the type in its messages


def gpu_name(text: str) -> str:
    return catalog_name(gpu_spec, "GPU")(text)


def engine_name(text: str) -> str:
    from lab_utils import engines

    return catalog_name(engines.get, "engine")(text)


ENGINE_HELP = (
    "serving engine whose profile times the bounds: bound, vllm, tensorrt-llm, tensorrt-llm-fp8, "
    "transformers-gptq, llama.cpp-metal (default: the one practitioners run on the device)"
)


def print_assumptions(taken, args: argparse.Namespace) -> None:
    """The assumptions an answer took, one short line each, with the option that overrides it
    where the command that answered (its parsed ``args``) has that option."""
    from lab_utils import assumptions

    names = {a.name for a in assumptions.catalog()}
    known = {name: value for name, value in dict(taken).items() if name in names}
    if not known:
        return
    print("assumptions (lab_utils/data/assumptions.toml):")
    for name, line in zip(known, assumptions.lines(known)):
        flags = (assumptions.get(name).option or "").split(" | ")
        flag = next((f for f in flags if f and hasattr(args, f.lstrip("-").replace("-", "_"))), None)
        print(f"  {line}" + (f" [{flag}]" if flag else ""))


def answer_json(args: argparse.Namespace, data: dict) -> bool:
    """A command's ``--json`` answer, ``data``: printed alone on stdout with --json (True: the
    command is done); else handed as that same text to ``args.json_answer`` when the caller of
    ``main`` asked for it (the website shows the text and draws from the JSON of one run), False."""
    text = json.dumps(data, indent=2, default=str)
    if args.json:
        print(text)
        return True
    if getattr(args, "json_answer", None) is not None:
        args.json_answer(text)
    return False


def text_table(rows, headers=(), colalign=None) -> str:
    """Rows as a text table (tabulate); without ``headers``, two plain columns of name and value."""
    from tabulate import tabulate

    return tabulate(
        rows,
        headers=headers,
        tablefmt="simple" if headers else "plain",
        disable_numparse=True,
        colalign=colalign,
    )
