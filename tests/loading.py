"""Load a Python file that is not a module of the package (a script, the worker's handler)."""

import importlib.util


def load_module(name: str, path):
    """The module that the file at ``path`` defines, imported under ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
