"""Build the offline bundle: the course and the wheels it installs, in one zip, for a room
without internet.

Usage: python scripts/offline_bundle.py [--output ZIP] [--platforms linux mac windows]
                                         [--pythons 3.10 ... 3.14] [--wheels FOLDER]

Downloads (needs internet, here only) the wheels of the course's dependencies and its ``lab``
extra (JupyterLab), pinned by constraints.txt, for each platform and Python asked, PyTorch's CPU
builds for Linux and Windows; builds the course's own wheel; and zips them with the notebooks and
``OFFLINE.md``. Without ``--pythons`` it tries every CPython from 3.10 (pyproject.toml's
requires-python) to 3.14 and leaves out, saying so, a Python for which a pinned package has no
wheel; OFFLINE.md lists the Pythons bundled. ``--wheels FOLDER`` uses wheels already there and
downloads nothing (the tests use it). A learner installs with no network at all: INSTALL
below, run in the unzipped folder.
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
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")  # requires-python >= 3.10, up to the newest CPython
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"  # CPU builds: no CUDA libraries (Linux, Windows)
PYPI = "https://pypi.org/simple"
EXTRA = "lab"
DISTRIBUTION = "cpu-vs-gpu-course"
INSTALL = (
    "python -m pip install --no-index --find-links wheels --constraint constraints.txt "
    f'"{DISTRIBUTION}[{EXTRA}]"'
)
OFFLINE_MD = f"""# The course, offline

Install with no network, in this folder (with one of the Pythons listed at the end):

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


def download(folder: Path, platforms, pythons, skip_missing: bool) -> list[str]:
    """Download every platform's wheels for each Python into ``folder``; the Pythons done. With
    ``skip_missing`` a Python for which pip finds no wheel of a pinned package is left out (one
    line says so), else its failure stops the bundle."""
    done = []
    for python in pythons:
        with tempfile.TemporaryDirectory() as scratch:
            try:
                for command in download_commands(Path(scratch), platforms, [python]):
                    platform = command[command.index("--platform") + 1]
                    print("downloading for", platform, "Python", python, flush=True)
                    subprocess.run(command, check=True)
            except subprocess.CalledProcessError:
                if not skip_missing:
                    raise
                print(f"Python {python} left out: a pinned package has no wheel for it (pip's message above)")
                continue
            for wheel in Path(scratch).glob("*.whl"):
                wheel.replace(folder / wheel.name)
            done.append(python)
    if not done:
        raise SystemExit("no Python could be bundled: see pip's messages above")
    return done


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
    parser.add_argument(
        "--pythons", nargs="+", choices=PYTHONS, help="default: every one with a wheel for each pin"
    )
    parser.add_argument("--wheels", type=Path, help="use the wheels in this folder; download nothing")
    args = parser.parse_args(argv)
    pythons = args.pythons or list(PYTHONS)
    with tempfile.TemporaryDirectory() as scratch:
        wheels = args.wheels or Path(scratch)
        if args.wheels is None:
            pythons = download(wheels, args.platforms, pythons, skip_missing=args.pythons is None)
        if not any(wheels.glob("cpu_vs_gpu_course-*.whl")):
            course_wheel(wheels)
        bundle(args.output, wheels, args.platforms, pythons)
    size_mb = args.output.stat().st_size / 1e6
    print(
        f"wrote {args.output} ({size_mb:,.0f} MB); "
        f"install with no network, in the unzipped folder:\n  {INSTALL}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
