"""What a user installs: the floors pyproject.toml promises, and the wheel on its own.

The wheel test builds the sdist and the wheel (from the sdist, as pip does for a source
release), installs the wheel by name with its extras into a new virtual environment and runs
``hja-bayes --version`` and ``hja-bayes demo`` from an empty folder, so nothing from the
source tree can be imported.  To stay quick it installs nothing else: the new environment
reads this environment's third-party packages through a folder of links that leaves out
hja_bayes itself (the editable install here).  ``pytest -m "not wheel"`` skips it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
MINIMUM = ROOT / "constraints" / "minimum.txt"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"{path.name}: {line!r} is not an exact pin"
            pins[canonicalize_name(req.name)] = spec.version
    return pins


def _floor(req: Requirement) -> str | None:
    floors = [s.version for s in req.specifier if s.operator == ">="]
    return floors[0] if floors else None


def test_minimum_constraints_pin_every_floor():
    # constraints/minimum.txt is what scripts/test_minimum.sh installs: every dependency of
    # the package and of its parquet and test extras, at exactly the floor pyproject states
    pins = _pins(MINIMUM)
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    for extra in ("parquet", "test"):
        reqs += [Requirement(r) for r in PROJECT["optional-dependencies"][extra]]
    for req in reqs:
        name = canonicalize_name(req.name)
        floor = _floor(req)
        assert floor is not None, f"{req} has no floor (>=)"
        pin = pins.get(name)
        assert pin is not None and Version(pin) == Version(floor), \
            f"{req}: constraints/minimum.txt pins {pin}"


def _site_packages() -> list[Path]:
    paths = sysconfig.get_paths()
    return sorted({Path(paths["purelib"]), Path(paths["platlib"])})


def _links_without_this_package(folder: Path) -> Path:
    """A folder of links to this environment's packages, hja_bayes and its editable hook left out."""
    folder.mkdir()
    own = re.compile(r"(hja_bayes|__editable__[._]+hja_bayes)", re.IGNORECASE)
    for site in _site_packages():
        for entry in site.iterdir():
            if own.match(entry.name) or entry.suffix == ".pth" or (folder / entry.name).exists():
                continue
            (folder / entry.name).symlink_to(entry)
    return folder


def _extras_installed_here() -> list[str]:
    """The extras whose every requirement this environment already satisfies."""
    usable = []
    for extra, reqs in PROJECT["optional-dependencies"].items():
        ok = True
        for line in reqs:
            req = Requirement(line)
            try:
                version = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                ok = False
                break
            ok = ok and req.specifier.contains(version, prereleases=True)
        if ok:
            usable.append(extra)
    return usable


@pytest.mark.wheel
def test_wheel_installs_by_name_and_runs_the_demo_without_the_source_tree(tmp_path):
    version = PROJECT["version"]
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    # no warning from the build backend (setuptools' deprecations are XxxWarning lines)
    noise = [line for line in (built.stdout + built.stderr).splitlines()
             if re.search(r"Warning\b|deprecat", line, flags=re.IGNORECASE)
             and "byte-compiling is disabled" not in line]  # PYTHONDONTWRITEBYTECODE set
    assert not noise, "\n".join(noise)
    (wheel,) = dist.glob("hja_bayes-*.whl")
    (sdist,) = dist.glob("hja_bayes-*.tar.gz")

    # every file of the bundled data sets is in the wheel and the sdist, with the licenses
    data = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "hja_bayes" / "data").rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)
    assert any(name.endswith("llm_judgments.csv.gz") for name in data)
    with zipfile.ZipFile(wheel) as zf:
        in_wheel = set(zf.namelist())
        meta = zf.read(f"hja_bayes-{version}.dist-info/METADATA").decode()
    assert set(data) <= in_wheel, sorted(set(data) - in_wheel)
    assert f"hja_bayes-{version}.dist-info/licenses/LICENSE" in in_wheel
    assert "License-Expression: MIT" in meta
    with tarfile.open(sdist) as tf:
        in_sdist = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert set(data) | {"LICENSE", "pyproject.toml"} <= in_sdist, sorted(set(data) - in_sdist)

    # every extra is declared in the metadata under its own name
    declared = set(re.findall(r"^Provides-Extra: (\S+)$", meta, flags=re.MULTILINE))
    assert {canonicalize_name(e) for e in PROJECT["optional-dependencies"]} <= declared

    # a new environment; the third-party packages come from this one, never hja_bayes
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    target_site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    links = _links_without_this_package(tmp_path / "deps")
    (target_site / "zz_test_dependencies.pth").write_text(f"{links}\n", encoding="utf-8")

    # installed by name, with the extras this environment can satisfy, from the built wheel
    # only: the dependency metadata must be met by what is here, nothing is downloaded
    extras = _extras_installed_here()
    assert "parquet" in extras and "test" in extras
    # (a source tree on PYTHONPATH would count as installed already)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    spec = f"hja_bayes[{','.join(extras)}]=={version}"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
         "--find-links", str(dist), "--only-binary", "hja_bayes", spec],
        capture_output=True, text=True, env=env)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    assert f"Successfully installed hja_bayes-{version}" in installed.stdout, installed.stdout

    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env["HJA_BAYES_CACHE"] = "off"

    def run(*args):
        out = subprocess.run([*map(str, args)], capture_output=True, text=True, cwd=run_dir,
                             env=env)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        return out.stdout

    where = run(python, "-c", "import hja_bayes; print(hja_bayes.__file__)").strip()
    assert Path(where).is_relative_to(venv), where
    assert run(bin_dir / "hja-bayes", "--version").strip() == f"hja-bayes {version}"
    shown = run(bin_dir / "hja-bayes", "demo", "--out", tmp_path / "report")
    assert "Leaderboard" in shown and "gpt4" in shown
    assert (tmp_path / "report" / "report.html").is_file()
