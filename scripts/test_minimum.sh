#!/usr/bin/env bash
# The lowest versions pyproject.toml allows, tested: a fresh virtual environment gets the
# package with its test extras at exactly the floors in constraints/minimum.txt, then a quick
# subset of the tests runs there (every dependency is exercised: the solver and intervals on
# JAX and SciPy, the readers on pandas and pyarrow, NUTS on NumPyro, ArviZ and the netCDF
# files, the confidence ranker on scikit-learn, the report on matplotlib, and the wheel built
# and run with these versions).
#
#   scripts/test_minimum.sh                 # or: make test-min
#   scripts/test_minimum.sh -x -k arviz     # extra arguments go to pytest
#
# PYTHON picks the interpreter (default python3), MIN_VENV the folder (default .venv-min,
# removed and made anew on every run).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${MIN_VENV:-.venv-min}

rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -c constraints/minimum.txt -e '.[test]'
"$VENV/bin/python" - <<'PY'
from importlib.metadata import version
import sys
names = ["jax", "jaxlib", "numpyro", "arviz", "numpy", "scipy", "pandas", "matplotlib",
         "scikit-learn", "h5netcdf", "xarray", "pyarrow", "duckdb", "polars"]
print(f"python {sys.version.split()[0]}; " + ", ".join(f"{n} {version(n)}" for n in names))
PY

TESTS=(
    tests/test_packaging.py
    tests/test_likelihood.py
    tests/test_readers.py
    tests/test_scan.py
    tests/test_btl.py
    tests/test_hja.py
    tests/test_inference.py
    tests/test_persistence.py
    tests/test_bayes_model.py
    tests/test_bayes_arviz.py
    tests/test_confidence_ranker.py
    tests/test_cli.py
)
# the suite's quick XLA flags (tests/conftest.py) are unknown to the floor's XLA, which aborts
# on an unknown flag: compile with XLA's defaults here
export HJA_TEST_XLA_DEFAULTS=1
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "${TESTS[@]}" "$@"
