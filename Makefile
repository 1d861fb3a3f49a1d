# Entry points: `make demo` sets up .venv with what the demo needs (torch 2.13.0
# and the build tools, requirements-build.txt), builds the four libraries
# incrementally and trains a model; `make test` adds the test and documentation
# requirements (requirements-test.txt) and runs every test; `make check` is the
# quick tier to run before each commit. `make docs` builds the documentation
# site; `make docs-check` opens every page of it in headless Chromium.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# One stamp per requirements file, so that `make demo` never installs the test set.
BUILD_DEPS := $(VENV)/.build-deps-installed
TEST_DEPS  := $(VENV)/.test-deps-installed
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k stream"`.
PYTEST_ARGS ?=
# pytest-xdist workers of `make test` and `make check`; TEST_WORKERS=0 runs the tests
# in pytest's own process. tests/conftest.py makes the groups a worker takes whole
# (the tests that must share a process) and orders them, slow files first, an
# order --no-loadscope-reorder keeps.
TEST_WORKERS ?= 2
WORKERS := -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder
# Extra sphinx-build arguments, e.g. `make docs SPHINXOPTS=-v`.
SPHINXOPTS ?=
DOCS_HTML := docs/_build/html

.PHONY: all build demo test check docs docs-check figures sanitize ecosystem-table clean distclean

all: build

$(PY):
	$(PYTHON) -m venv $(VENV)

# LITERALINCLUDE START: BUILD MAKE TARGETS
# The build set: torch first and pinned, so nothing pulls a newer one.
$(BUILD_DEPS): $(PY) requirements-build.txt
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -r requirements-build.txt
	touch $@

# The editable install registers the package and its autoload entry point; it
# re-runs only when packaging metadata changes. Later builds are plain
# incremental CMake builds.
$(VENV)/.installed: $(BUILD_DEPS) setup.py pyproject.toml CMakeLists.txt
	$(PIP) install --quiet --no-build-isolation --no-deps -e .
	touch $@

build: $(VENV)/.installed
	$(VENV)/bin/cmake --build build -j $$(nproc)
# LITERALINCLUDE END: BUILD MAKE TARGETS

# The test set on top of it (pytest, ruff, Sphinx, the integration libraries).
# requirements-test.txt includes requirements-build.txt, so pip resolves the two
# together and keeps the pinned torch.
$(TEST_DEPS): $(BUILD_DEPS) requirements-test.txt
	$(PIP) install --quiet -r requirements-test.txt
	touch $@

demo: build
	$(PY) examples/train_mlp.py

# tests/test_docs.py also builds the docs with warnings as errors and runs
# the marker check (tools/check_doc_markers.py); tests/test_size.py runs the
# size guard (tools/sz.py) and tests/test_style.py the Python lint (ruff).
test: build $(TEST_DEPS)
	$(PY) -m pytest $(WORKERS) $(PYTEST_ARGS)

# The quick tier, before each commit: every test but the slow files (SLOW in
# tests/conftest.py), the size guard, ruff and the documentation checks among
# them. `make test` runs everything.
check: build $(TEST_DEPS)
	$(PY) -m pytest $(WORKERS) -m "not slow" $(PYTEST_ARGS)

# AddressSanitizer + UndefinedBehaviorSanitizer: an instrumented copy of the
# libraries in build-asan/ and pytest under it (tools/sanitize.sh). Slow, so not
# part of `make test`; `make sanitize PYTEST_ARGS=tests/test_ops.py` picks tests,
# `make sanitize PYTEST_ARGS=tests` runs the whole suite.
sanitize: $(TEST_DEPS)
	tools/sanitize.sh $(PYTEST_ARGS)

# The compatibility table of README.md and docs/chapters/ecosystem.md, from the
# integration suite's last run (build/ecosystem.json, written by `make test`).
ecosystem-table:
	$(PY) tools/ecosystem_table.py

# The site alone: needs only the requirements (Sphinx, MyST), not the build.
# -E rereads every source, so warnings of unchanged pages are not lost to the
# incremental build; -W makes them errors, --keep-going lists them all.
docs: $(TEST_DEPS)
	$(PY) -m sphinx -b html -E -W --keep-going $(SPHINXOPTS) docs $(DOCS_HTML)

# Every page in headless Chromium: broken links and anchors, missing images,
# empty code blocks (tools/docs_check.py).
docs-check: docs
	$(PY) tools/docs_check.py $(DOCS_HTML)

# The guide's figures (docs/chapters/img/*.svg), drawn by tools/figures.py from
# the code (CMake files, #include lines, function names) and from real runs of
# the built package (profiler traces, an allocator snapshot).
figures: build
	$(PY) tools/figures.py

clean:
	rm -rf build build-asan torch_accinte/lib torch_accinte/_C*.so $(VENV)/.installed docs/_build

distclean: clean
	rm -rf $(VENV) *.egg-info
