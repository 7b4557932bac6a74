"""The website's offline JavaScript: pinned in a lock file, checked before it is unpacked, and
the course zip the site offers. Runs without network (tarballs are built here)."""

import base64
import hashlib
import io
import json
import sys
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import web_assets  # noqa: E402


def _tarball(path: Path, files: dict[str, bytes]) -> str:
    """Write an npm-style tarball (files under package/) and return its integrity string."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def _package(integrity: str) -> web_assets.Package:
    return web_assets.Package(
        name="@scope/demo",
        version="1.2.3",
        integrity=integrity,
        into="demo",
        files=("dist/main.js", "dist/*.woff2", "es5/"),
        entry="dist/main.js",
    )


def test_the_lock_pins_exact_versions_with_sha512():
    destination, packages = web_assets.read_lock()
    assert destination == ROOT / "book" / "_static" / "vendor"
    assert {p.name for p in packages} == {"mathjax", "requirejs", "@jupyter-widgets/html-manager", "pyodide"}
    for package in packages:
        assert package.version.count(".") == 2 and package.version.replace(".", "").isdigit(), package.spec
        assert package.integrity.startswith("sha512-") and len(base64.b64decode(package.integrity[7:])) == 64
        assert package.wanted(package.entry), f"{package.spec}: its entry file is not among its files"


def test_the_tarball_name_is_npm_packs():
    assert _package("x").tarball_name == "scope-demo-1.2.3.tgz"


def test_only_the_wanted_files_are_unpacked(tmp_path):
    files = {
        "dist/main.js": b"main",
        "dist/font.woff2": b"font",
        "dist/main.js.map": b"map",
        "es5/a/b.js": b"b",
        "README.md": b"readme",
    }
    tarball = tmp_path / "demo.tgz"
    package = _package(_tarball(tarball, files))
    count = web_assets.unpack(package, tarball, tmp_path / "vendor")
    unpacked = sorted(
        p.relative_to(tmp_path / "vendor/demo").as_posix()
        for p in (tmp_path / "vendor/demo").rglob("*")
        if p.is_file()
    )
    assert count == 3
    assert unpacked == [".installed.json", "dist/font.woff2", "dist/main.js", "es5/a/b.js"]
    assert web_assets.installed(package, tmp_path / "vendor")
    assert not web_assets.installed(replace(package, version="1.2.4"), tmp_path / "vendor")


def test_a_tarball_with_another_checksum_is_refused_and_deleted(tmp_path):
    tarball = tmp_path / "demo.tgz"
    good = _tarball(tarball, {"dist/main.js": b"main"})
    _tarball(tarball, {"dist/main.js": b"tampered"})
    with pytest.raises(ValueError, match="differs from the pinned"):
        web_assets.unpack(_package(good), tarball, tmp_path / "vendor")
    assert not tarball.exists()
    assert not (tmp_path / "vendor" / "demo").exists()


def test_a_path_outside_the_package_is_refused(tmp_path):
    tarball = tmp_path / "demo.tgz"
    integrity = _tarball(tarball, {"dist/main.js": b"main", "es5/../../escape.js": b"x"})
    with pytest.raises(ValueError, match="unsafe path"):
        web_assets.unpack(_package(integrity), tarball, tmp_path / "vendor")
    assert not (tmp_path / "escape.js").exists() and not (tmp_path / "vendor" / "demo").exists()


def test_without_npm_the_fetch_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(web_assets.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="npm is not installed"):
        web_assets.fetch(_package("sha512-x"), cache=tmp_path)


def test_the_course_zip_holds_the_notebooks_and_the_package():
    pytest.importorskip("sphinx")
    import course_site

    data = course_site.course_zip_bytes(ROOT)
    assert data == course_site.course_zip_bytes(ROOT), "the same files give the same zip"
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    top = course_site.COURSE_ZIP_FOLDER
    assert f"{top}/pyproject.toml" in names and f"{top}/lab_utils/__init__.py" in names
    assert f"{top}/notebooks/00_start_here.ipynb" in names
    assert not [n for n in names if "__pycache__" in n or ".ipynb_checkpoints" in n or ".egg-info" in n]
    notebook = json.loads(zipfile.ZipFile(io.BytesIO(data)).read(f"{top}/notebooks/00_start_here.ipynb"))
    assert notebook["cells"], "the notebook came through whole"
