# The course's verbs. Each sets up .venv first when needed (install with the tested pins).
#   make lab    open JupyterLab on the course (installs only what learners need: make setup-lab)
#   make book   execute the notebooks, one at a time, and build the website into _build/html
#   make test   (designed for 5 minutes on a quiet 2-core machine with .venv present) the unit
#               tests and lab_utils' doctests (test-unit), every notebook executed once and its checked outputs
#               compared by nbval (test-notebooks), the setup cell in a Colab-like environment
#               (test-colab), a strict website build from that same execution (test-book), and
#               every page of it opened in headless Chromium with no internet (test-site)
#   make test-fast        test-unit and test-notebooks only (no Colab check, no website)
#   make test-standalone  each notebook alone in the Colab-like environment (slow; CI runs it after make test)
#   make linkcheck   check the website's external links (needs internet; not part of make test)

PYTHON ?= $(first_python)
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
LAB_INSTALLED := $(VENV)/.installed-lab  # learners: .[lab] only (make setup-lab)
NBVAL_FLAGS := --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
# Notebooks executed at once by make test (make book: always 1), and pytest processes for the unit tests.
NOTEBOOK_JOBS ?= 2
UNIT_JOBS ?= 2
SITE_HTML := _build/strict/_build/html
# In the tests, torch's idle OpenMP threads sleep instead of spinning: two notebooks and two pytest
# processes share the cores, and spinning threads took the CPU the others were waiting for
# (measured here, quiet, every notebook executed: make test 346 s and 597 CPU-seconds with the
# default policy, 213 s and 317 with PASSIVE). The notebooks keep all their threads; make book,
# whose timings are published, runs them with the default policy, as a learner's kernel does.
TEST_OMP := OMP_WAIT_POLICY=PASSIVE
CHROMIUM ?= chromium

.PHONY: setup lab book test test-fast test-unit-then-colab test-notebooks-then-site test-unit test-notebooks test-colab test-standalone test-book test-site \
	site-deps web-assets linkcheck clean

setup: $(INSTALLED)

# The package installs as "cpu-vs-gpu-course" (PyPI's "lab-utils" is another project); a .venv
# made before that rename still holds it as "lab-utils", so that is removed first (else a no-op).
$(INSTALLED): pyproject.toml constraints.txt
	$(make_venv)
	$(BIN)/python -m pip uninstall --quiet --yes lab-utils 2>/dev/null || true
	$(BIN)/python -m pip install --quiet --constraint constraints.txt --editable ".[lab,book,serverless,test,llm]"
	$(BIN)/python -c "import torch; print('installed torch', torch.__version__, '(CUDA build)' if torch.version.cuda else '(CPU build)')"
	touch $@

lab: $(LAB_INSTALLED)
	$(BIN)/jupyter lab notebooks/00_start_here.ipynb

# Publishing: every notebook not in the execution cache, or last executed beside another one, is
# executed alone (so the timings on the pages and the build-status page were not measured while
# another notebook ran); --all renders every page from the cache again.
book: $(INSTALLED) web-assets
	$(BIN)/python scripts/run_notebooks.py --jobs 1 --alone
	$(BIN)/jupyter-book build --all .
	@echo "Website: _build/html/index.html"

# Two lines of work side by side (make -j2), each printed when it ends: the unit tests, then the
# Colab check; and the notebooks, then the strict website from their execution and the browser
# test. Chromium and npm are installed first when missing. Any failure fails make test.
test:
	$(MAKE) --no-print-directory $(INSTALLED)
	$(MAKE) --no-print-directory -j2 --output-sync=target site-deps test-unit-then-colab test-notebooks-then-site

test-unit-then-colab:
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory test-colab

test-notebooks-then-site:
	$(MAKE) --no-print-directory test-notebooks
	$(MAKE) --no-print-directory test-site

test-fast:
	$(MAKE) --no-print-directory $(INSTALLED)
	$(MAKE) --no-print-directory -j2 --output-sync=target test-unit test-notebooks

# First ruff, the linter and formatter (pyproject.toml's [tool.ruff]; a second or two): any finding,
# or a file `ruff format` would change, fails here. Then the unit tests, and the examples in
# lab_utils' docstrings run as doctests (no GPU, widgets or network needed: every module imports
# with the required packages alone). The tests marked slow (they start processes: torchrun, the
# worker, the GPU reference script, the CLI) run in a second pytest process beside the others; the
# timing tests (marked timing) are written so that a busy machine cannot fail them. tests/site runs
# in test-site. One torch thread per process (OMP_NUM_THREADS=1; a test about threads sets its own):
# beside the notebooks, two threads each only wait for one another (measured here on a quiet
# machine: 145 s wall with one, 175 s with two).
test-unit: $(INSTALLED)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	OMP_NUM_THREADS=1 $(TEST_OMP) $(BIN)/python scripts/parallel_pytest.py --jobs $(UNIT_JOBS) -- --doctest-modules --ignore=tests/site tests lab_utils

# Every notebook executed once (two at a time) into the execution cache (scripts/run_notebooks.py),
# then nbval compares each "# NBVAL_CHECK_OUTPUT" cell with that execution (scripts/nbval_cached.py).
# Why not nbval's own run: it keeps no widget state, which the website needs; this way the
# website (test-book, book) renders the very execution nbval checked, and nothing runs twice.
# The cache is emptied whenever lab_utils, pyproject.toml or constraints.txt change
# (book/_ext/execution_cache.py), and a notebook whose code changed is executed again.
test-notebooks: $(INSTALLED)
	$(TEST_OMP) $(BIN)/python scripts/run_notebooks.py --jobs $(NOTEBOOK_JOBS); status=$$?; \
	PYTHONPATH=scripts $(BIN)/python -m pytest -q -p nbval_cached --nbval-cached $(NBVAL_FLAGS) notebooks \
	&& exit $$status

# The Colab-like environment (_build/standalone-venv: torch and Colab's ipywidgets 7.7, no
# lab_utils; made once and kept between runs): the shared setup cell runs once in an empty
# folder and installs the course from this clone; passes when torch and ipywidgets keep their
# versions and every file a notebook asks lab_utils.course_files for resolves from the installed
# package (scripts/standalone_notebooks.py --setup-cell).
# STANDALONE_REPOSITORY=file://$(CURDIR) installs the committed state with git, as Colab does.
STANDALONE_REPOSITORY ?= $(CURDIR)
test-colab: $(INSTALLED)
	$(BIN)/python scripts/standalone_notebooks.py --setup-cell --repository $(STANDALONE_REPOSITORY)

# Each notebook alone, as Colab opens it: copied into an empty folder and run in the Colab-like
# environment, the setup cell installing the course each time. 6-19 s a notebook here (136 s for
# all thirteen, 2026-12-04): not in make test (.ci/run runs it after make test; CI_STANDALONE=0 skips it).
test-standalone: $(INSTALLED)
	$(BIN)/python scripts/standalone_notebooks.py --repository $(STANDALONE_REPOSITORY)

# Strict: warnings are errors, and a fresh output folder; the notebooks' outputs come from the
# execution cache that test-notebooks checked (run_notebooks.py executes any notebook missing
# there: a second or two when none is).
test-book: $(INSTALLED) web-assets
	$(TEST_OMP) $(BIN)/python scripts/run_notebooks.py --jobs $(NOTEBOOK_JOBS)
	rm -rf _build/strict
	$(BIN)/jupyter-book build --all --warningiserror --keep-going --path-output _build/strict .

# The browser test (tests/site): every page of the strict build, served on 127.0.0.1 and opened
# in headless Chromium that can reach nothing else; screenshots in _build/site-test/screenshots.
# On an existing build: SITE_HTML=_build/strict/_build/html .venv/bin/python -m pytest tests/site
test-site: $(INSTALLED) site-deps test-book
	SITE_HTML=$(SITE_HTML) CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest tests/site

# What test-site needs beyond .venv, installed when missing (Debian/Ubuntu as root, as on CI):
# Chromium, and npm for the web assets. Elsewhere install them yourself, or set CHROMIUM=.
site-deps:
	@command -v $(CHROMIUM) >/dev/null || $(call apt_install,chromium)
	@command -v npm >/dev/null || $(call apt_install,npm)

apt_install = { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update && apt-get install -y $(1); } \
	|| { echo "please install $(1) (Debian/Ubuntu: sudo apt-get install $(1))" >&2; exit 1; }

# MathJax and the ipywidgets manager from the npm registry, pinned and checksum-checked
# (book/_ext/web-assets.lock.json), so the website renders offline; the CDN when not available.
web-assets:
	$(PYTHON) book/_ext/web_assets.py

# External links, listed and checked: _build/linkcheck/_build/html/output.txt (and .json). Needs
# internet; not part of make test, and a failure here blocks nothing. Reads the execution cache.
linkcheck: $(INSTALLED) web-assets
	$(BIN)/jupyter-book build --builder linkcheck --path-output _build/linkcheck .

# --- Python version and the learners' install (issue 27) ------------------------------------
.PHONY: setup-lab offline-bundle
# The first of python3.13 ... python3 that is 3.10 or newer: on a Mac, "python3" can still be
# Apple's 3.9 after a newer Python was installed. A .venv made by an older Python is rebuilt.
first_python := $(shell for p in python3.13 python3.12 python3.11 python3.10 python3; do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null && { echo $$p; break; }; done)
make_venv = @$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || \
	{ echo "The course needs Python 3.10 or newer; '$(or $(PYTHON),python3)' is $$($(or $(PYTHON),python3) --version 2>&1 || echo missing). Install one (python.org), or run: make PYTHON=/path/to/python3.12" >&2; exit 1; }; \
	if [ -x $(BIN)/python ] && ! $(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then \
	echo "$(VENV) was made by $$($(BIN)/python --version 2>&1), too old: making it again with $(PYTHON)"; rm -rf $(VENV); fi; \
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)

# Learners: JupyterLab and the course only (.[lab]); `make setup` adds the website and test tools.
setup-lab: $(LAB_INSTALLED)

$(LAB_INSTALLED): pyproject.toml constraints.txt
	$(make_venv)
	$(BIN)/python -m pip install --constraint constraints.txt --editable ".[lab]"  # its progress shown: learners wait minutes
	touch $@

# The offline bundle for a room without internet (downloads several GB; not part of make test):
# _build/offline/course-offline.zip. OFFLINE_FLAGS="--pythons 3.12 --platforms linux" for a smaller one.
offline-bundle: $(INSTALLED)
	$(BIN)/python scripts/offline_bundle.py $(OFFLINE_FLAGS)

clean:
	rm -rf _build .pytest_cache
