"""`import lab_utils` and its pure modules must stay instant: no torch until tensors run."""

import subprocess
import sys

import lab_utils

TORCH_MODULES = {"models"}  # it exists to run tensors; every other module imports torch lazily
PURE_MODULES = [f"lab_utils.{name}" for name in lab_utils.SUBMODULES if name not in TORCH_MODULES]


def imported_modules_after(code: str) -> set:
    """The names in sys.modules after running ``code`` in a fresh interpreter."""
    script = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return set(output.split())


def test_importing_every_module_does_not_import_torch():
    modules = imported_modules_after("\n".join(f"import {name}" for name in PURE_MODULES))
    assert set(PURE_MODULES) <= modules  # the imports really happened
    assert "torch" not in modules


def test_cli_help_does_not_import_torch():
    modules = imported_modules_after(
        "from lab_utils import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass"
    )
    assert "lab_utils.cli" in modules
    assert "torch" not in modules


def test_submodules_load_on_attribute_access():
    assert lab_utils.units.format_bytes(1024) == "1.0 kB"


def test_unknown_attribute_is_an_attribute_error():
    try:
        _ = lab_utils.no_such_module
    except AttributeError as error:
        assert "no_such_module" in str(error)
    else:
        raise AssertionError("lab_utils.no_such_module did not raise AttributeError")


def test_every_module_is_listed():
    assert {"hardware", "machine", "models", "timing"} <= set(lab_utils.SUBMODULES)


def test_installed_distribution_is_the_one_pyproject_names():
    # PyPI's "lab-utils" is an unrelated project: the course's distribution has its own name,
    # and the installed metadata (what pip and `lab-utils --version` report) must agree with it.
    import importlib.metadata
    import pathlib

    from lab_utils.catalogs import tomllib

    project = tomllib.loads((pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())[
        "project"
    ]
    assert project["name"] != "lab-utils"
    distribution = importlib.metadata.distribution(project["name"])
    assert distribution.version == project["version"] == lab_utils.__version__
    scripts = {e.name: e.value for e in distribution.entry_points if e.group == "console_scripts"}
    assert scripts == {"lab-utils": "lab_utils.cli:main"}
