# Entry points: `make demo` and `make test` each set up .venv (Python, torch
# 2.13.0, build tools), build the four libraries incrementally, then run.
# `make docs` builds the documentation site; `make docs-check` opens every
# page of it in headless Chromium.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.deps-installed
# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k stream"`.
PYTEST_ARGS ?=
# Extra sphinx-build arguments, e.g. `make docs SPHINXOPTS=-v`.
SPHINXOPTS ?=
DOCS_HTML := docs/_build/html

.PHONY: all build demo test docs docs-check figures sanitize ecosystem-table clean distclean

all: build

$(PY):
	$(PYTHON) -m venv $(VENV)

# LITERALINCLUDE START: BUILD MAKE TARGETS
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
# LITERALINCLUDE END: BUILD MAKE TARGETS

demo: build
	$(PY) examples/train_mlp.py

# tests/test_docs.py also builds the docs with warnings as errors and runs
# the marker check (tools/check_doc_markers.py); tests/test_size.py runs the
# size guard (tools/sz.py) and tests/test_style.py the Python lint (ruff).
test: build
	$(PY) -m pytest $(PYTEST_ARGS)

# AddressSanitizer + UndefinedBehaviorSanitizer: an instrumented copy of the
# libraries in build-asan/ and pytest under it (tools/sanitize.sh). Slow, so not
# part of `make test`; `make sanitize PYTEST_ARGS=tests/test_ops.py` picks tests,
# `make sanitize PYTEST_ARGS=tests` runs the whole suite.
sanitize: $(STAMP)
	tools/sanitize.sh $(PYTEST_ARGS)

# The compatibility table of README.md and docs/chapters/ecosystem.md, from the
# integration suite's last run (build/ecosystem.json, written by `make test`).
ecosystem-table:
	$(PY) tools/ecosystem_table.py

# The site alone: needs only the requirements (Sphinx, MyST), not the build.
# -E rereads every source, so warnings of unchanged pages are not lost to the
# incremental build; -W makes them errors, --keep-going lists them all.
docs: $(STAMP)
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
