"""The website's JavaScript from the npm registry, pinned and checked, so pages render offline.

Run ``python3 book/_ext/web_assets.py`` (``make book`` and ``make test`` do): for each package in
``web-assets.lock.json`` it gets the tarball with ``npm pack NAME@VERSION``, checks its sha512
against the pinned ``integrity`` (npm's Subresource Integrity format, the registry's
``dist.integrity``) and only then unpacks the listed files into ``book/_static/vendor/<into>/``.
A package already unpacked at the pinned version is skipped, so the command is idempotent and
needs no network the second time. Without npm or a registry it warns and the website falls back
to the public CDN (see course_site.py); a checksum that does not match is always an error.

Standard library only: it runs before the course's virtual environment exists.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

LOCK_FILE = Path(__file__).with_name("web-assets.lock.json")
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "_build" / "web-assets-cache"  # downloaded tarballs (make clean removes them)
STAMP = ".installed.json"  # a dotfile: Sphinx does not copy it into the website
NPM_TIMEOUT_S = 300


@dataclass(frozen=True)
class Package:
    """One pinned npm package and the files the website needs from it."""

    name: str
    version: str
    integrity: str
    into: str
    files: tuple[str, ...]
    entry: str

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def tarball_name(self) -> str:
        # npm pack's file name: @scope/name -> scope-name-VERSION.tgz
        return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"

    def stamp(self) -> dict:
        return {"name": self.name, "version": self.version, "integrity": self.integrity}

    def wanted(self, path_in_package: str) -> bool:
        """Whether the file at ``path_in_package`` (relative to the package root) is needed."""
        return any(
            path_in_package.startswith(pattern)
            if pattern.endswith("/")
            else fnmatch.fnmatchcase(path_in_package, pattern)
            for pattern in self.files
        )


def read_lock(lock_file: Path = LOCK_FILE) -> tuple[Path, list[Package]]:
    """(destination folder, packages) from the lock file."""
    lock = json.loads(lock_file.read_text(encoding="utf-8"))
    packages = [
        Package(p["name"], p["version"], p["integrity"], p["into"], tuple(p["files"]), p["entry"])
        for p in lock["packages"]
    ]
    return ROOT / lock["destination"], packages


def installed(package: Package, destination: Path) -> bool:
    """Whether ``package`` is unpacked at its pinned version, with its entry file present."""
    folder = destination / package.into
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp == package.stamp() and (folder / package.entry).is_file()


def integrity_of(path: Path) -> str:
    """The Subresource Integrity string (``sha512-<base64>``) of the file at ``path``."""
    digest = hashlib.sha512(path.read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode("ascii")


def fetch(package: Package, cache: Path = CACHE) -> Path:
    """The package's tarball, from ``cache`` or downloaded there with ``npm pack``.

    RuntimeError when npm is missing or fails (no network, unknown version).
    """
    tarball = cache / package.tarball_name
    if tarball.is_file():
        return tarball
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed")
    cache.mkdir(parents=True, exist_ok=True)
    try:
        result = subprocess.run(
            [npm, "pack", package.spec, "--pack-destination", str(cache), "--silent"],
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"npm pack {package.spec} took more than {NPM_TIMEOUT_S} s") from None
    if result.returncode != 0 or not tarball.is_file():
        raise RuntimeError(f"npm pack {package.spec} failed: {result.stderr.strip()[-500:]}")
    return tarball


def unpack(package: Package, tarball: Path, destination: Path) -> int:
    """Extract the package's wanted regular files into ``destination/<into>``; returns the count.

    The tarball is checked against the pinned integrity first; ValueError if it differs (the
    tarball is then deleted so the next run downloads it again).
    """
    found = integrity_of(tarball)
    if found != package.integrity:
        tarball.unlink()
        raise ValueError(
            f"{package.spec}: the tarball's integrity {found} differs from the pinned "
            f"{package.integrity} in {LOCK_FILE.name}; nothing was extracted"
        )
    destination.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{package.into}-", dir=destination))
    count = 0
    try:
        with tarfile.open(tarball, "r:gz") as archive:
            for member in archive.getmembers():
                # npm tarballs keep the package under one top folder, usually "package/"
                inner = member.name.split("/", 1)[1] if "/" in member.name else ""
                if not (member.isfile() and package.wanted(inner)):
                    continue
                target = (staging / inner).resolve()
                if staging.resolve() not in target.parents:
                    raise ValueError(f"{package.spec}: unsafe path in tarball: {member.name!r}")
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.extractfile(member) as source, open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink)
                count += 1
        if not (staging / package.entry).is_file():
            raise ValueError(f"{package.spec}: the tarball has no {package.entry}")
        (staging / STAMP).write_text(json.dumps(package.stamp(), indent=1) + "\n", encoding="utf-8")
        final = destination / package.into
        if final.exists():
            shutil.rmtree(final)
        os.replace(staging, final)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return count


def main(argv: list[str] | None = None) -> int:
    """Install every locked package that is missing; 0 unless a checksum did not match."""
    destination, packages = read_lock()
    status = 0
    for package in packages:
        if installed(package, destination):
            continue
        try:
            count = unpack(package, fetch(package), destination)
        except RuntimeError as error:  # no npm or no registry: the website uses the CDN
            print(
                f"web assets: {package.spec} not available ({error}); "
                f"the website will load it from the public CDN (the live calculators, which need "
                f"pyodide, show that Python could not load)",
                file=sys.stderr,
            )
            continue
        except ValueError as error:
            print(f"web assets: {error}", file=sys.stderr)
            status = 1
            continue
        print(
            f"web assets: {package.spec} checked ({package.integrity[:19]}...), "
            f"{count} files in {(destination / package.into).relative_to(ROOT)}"
        )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
