# Two entry points: `make demo` (the main job on the bundled data) and `make test`.
# Both create a virtual environment in .venv on first use and install the package into it,
# with the test extra and the Dask and Spark scan engines (Spark's tests skip, saying so,
# where no Java runtime is installed).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the suite runs in two worker processes (pytest-xdist), one test file per worker at a time:
# most of a first run is XLA compiling small programs one at a time, which keeps one core busy
TEST_WORKERS ?= 2

.PHONY: demo test test-min install models

# compileall: the bytecode of the installed packages and of this one (an editable install
# has none), written once: where PYTHONDONTWRITEBYTECODE is set every process would
# otherwise compile what it imports again.  pip would compile the packages one file at a
# time (33 s of a 50 s install); here every core compiles them, test folders left out
# (16 s in all, the install 33 s)
SITE = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -e '.[test,dask,spark]'
	$(BIN)/python -m compileall -q -j 0 -x '/tests?/' "$(SITE)" hja_bayes
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/hja-bayes demo

test: $(BIN)/.installed
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

# the lowest dependency versions pyproject.toml allows (constraints/minimum.txt), in a fresh
# .venv-min, with a quick subset of the tests (a few minutes, most of it the install)
test-min:
	PYTHON=$(PYTHON) scripts/test_minimum.sh

# regenerate the saved fit of the bundled data in models/
models: $(BIN)/.installed
	$(BIN)/hja-bayes fit bundled:prd_vicuna80 --position-bias --out models/prd_vicuna80 --quiet
