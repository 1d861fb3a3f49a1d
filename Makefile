# Entry points: `make demo` and `make test` each set up .venv (Python, torch
# 2.13.0, build tools), build the four libraries incrementally, then run.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.deps-installed
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k stream"`.
PYTEST_ARGS ?=

.PHONY: all build demo test test-runtime clean distclean

all: build

$(PY):
	$(PYTHON) -m venv $(VENV)

# Third-party requirements: torch first and pinned, so nothing pulls a newer one.
$(STAMP): $(PY) requirements-dev.txt
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@

# The editable install registers the package and its autoload entry point; it
# re-runs only when packaging metadata changes. Later builds are plain
# incremental CMake builds.
$(VENV)/.installed: $(STAMP) setup.py pyproject.toml CMakeLists.txt
	$(PIP) install --quiet --no-build-isolation --no-deps -e .
	touch $@

build: $(VENV)/.installed
	$(VENV)/bin/cmake --build build -j $$(nproc)

demo: build
	$(PY) examples/train_mlp.py

test: build
	$(PY) -m pytest $(PYTEST_ARGS)

clean:
	rm -rf build torch_accinte/lib torch_accinte/_C*.so $(VENV)/.installed

distclean: clean
	rm -rf $(VENV) *.egg-info
