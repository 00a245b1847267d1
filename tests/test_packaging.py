"""What a user installs: the floors pyproject.toml promises."""

from __future__ import annotations

import tomllib
from pathlib import Path

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
