"""Build the offline bundle: the course and the wheels it installs, in one zip, for a room
without internet.

Usage: python scripts/offline_bundle.py [--output ZIP] [--platforms linux mac windows]
                                         [--pythons 3.10 3.11 3.12 3.13] [--wheels FOLDER]

Downloads (needs internet, here only) the wheels of the course's dependencies and its ``lab``
extra (JupyterLab), pinned by constraints.txt, for each platform and Python asked, PyTorch's CPU
builds for Linux and Windows; builds the course's own wheel; and zips them with the notebooks and
``OFFLINE.md``. ``--wheels FOLDER`` uses wheels already there and downloads nothing (the tests
use it). A learner installs with no network at all: INSTALL below, run in the unzipped folder.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import course_site  # noqa: E402  (the website's course.zip: the same files)

from lab_utils.catalogs import tomllib  # noqa: E402

# pip expands each to the older tags it accepts (manylinux_2_17, earlier macOS versions, universal2)
PLATFORMS = {"linux": "manylinux_2_28_x86_64", "mac": "macosx_14_0_arm64", "windows": "win_amd64"}
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # CPU builds: no CUDA libraries (Linux, Windows)
PYPI = "https://pypi.org/simple"
EXTRA = "lab"
DISTRIBUTION = "cpu-vs-gpu-course"
INSTALL = (
    "python -m pip install --no-index --find-links wheels --constraint constraints.txt "
    f'"{DISTRIBUTION}[{EXTRA}]"'
)
OFFLINE_MD = f"""# The course, offline

Install with no network, in this folder (Python 3.10 to 3.13):

    python3 -m venv .venv
    .venv/bin/{INSTALL}
    .venv/bin/python -m lab_utils doctor
    .venv/bin/jupyter lab notebooks/00_start_here.ipynb

On Windows (PowerShell): `py -3 -m venv .venv`, then the same lines with `.venv\\Scripts\\python`
and `.venv\\Scripts\\jupyter`. `--no-index` keeps pip off the internet: everything comes from
`wheels/`. Wheels for platforms: {{platforms}}; Pythons: {{pythons}}.
"""


def requirements() -> list[str]:
    """The course's dependencies and its lab extra, as pyproject.toml lists them."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        project = tomllib.load(file)["project"]
    return [*project["dependencies"], *project["optional-dependencies"][EXTRA]]


def download_commands(folder: Path, platforms, pythons) -> list[list[str]]:
    """One ``pip download`` per platform and Python: binary wheels only, pinned by constraints.txt."""
    commands = []
    for platform in platforms:
        index = (
            ["--index-url", PYPI]
            if platform == "mac"
            else ["--index-url", CPU_TORCH_INDEX, "--extra-index-url", PYPI]
        )
        for python in pythons:
            commands.append(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--dest",
                    str(folder),
                    "--only-binary=:all:",
                    "--platform",
                    PLATFORMS[platform],
                    "--python-version",
                    python,
                    "--implementation",
                    "cp",
                    "--constraint",
                    str(ROOT / "constraints.txt"),
                    *index,
                    *requirements(),
                ]
            )
    return commands


def course_wheel(folder: Path) -> Path:
    """Build the course's own wheel into ``folder`` from the files the zip holds (in a scratch
    copy, so the clone stays clean) with the build backend already installed: no network."""
    with tempfile.TemporaryDirectory() as scratch:
        with zipfile.ZipFile(io.BytesIO(course_site.course_zip_bytes(ROOT))) as course:
            course.extractall(scratch)
        source = Path(scratch) / course_site.COURSE_ZIP_FOLDER
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                "--wheel-dir",
                str(folder),
                str(source),
            ],
            check=True,
        )
    return next(Path(folder).glob("cpu_vs_gpu_course-*.whl"))


def bundle(output: Path, wheels: Path, platforms, pythons) -> Path:
    """Write the zip: course.zip's files, ``wheels/`` and OFFLINE.md, under one top folder."""
    top = course_site.COURSE_ZIP_FOLDER
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with zipfile.ZipFile(io.BytesIO(course_site.course_zip_bytes(ROOT))) as course:
            for info in course.infolist():
                archive.writestr(info, course.read(info))
        for wheel in sorted(wheels.glob("*.whl")):
            archive.write(
                wheel, f"{top}/wheels/{wheel.name}", compress_type=zipfile.ZIP_STORED
            )  # already compressed
        text = OFFLINE_MD.replace("{platforms}", ", ".join(platforms)).replace(
            "{pythons}", ", ".join(pythons)
        )
        archive.writestr(f"{top}/OFFLINE.md", text)
    return output


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "_build" / "offline" / "course-offline.zip")
    parser.add_argument("--platforms", nargs="+", choices=tuple(PLATFORMS), default=list(PLATFORMS))
    parser.add_argument("--pythons", nargs="+", choices=PYTHONS, default=list(PYTHONS))
    parser.add_argument("--wheels", type=Path, help="use the wheels in this folder; download nothing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        wheels = args.wheels or Path(scratch)
        if args.wheels is None:
            for command in download_commands(wheels, args.platforms, args.pythons):
                print(
                    "downloading for",
                    command[command.index("--platform") + 1],
                    "Python",
                    command[command.index("--python-version") + 1],
                    flush=True,
                )
                subprocess.run(command, check=True)
        if not any(wheels.glob("cpu_vs_gpu_course-*.whl")):
            course_wheel(wheels)
        bundle(args.output, wheels, args.platforms, args.pythons)
    size_mb = args.output.stat().st_size / 1e6
    print(
        f"wrote {args.output} ({size_mb:,.0f} MB); "
        f"install with no network, in the unzipped folder:\n  {INSTALL}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
