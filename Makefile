# The course's verbs. Each sets up .venv first when needed (install with the tested pins).
#   make lab    open JupyterLab on the course (installs only what learners need: make setup-lab)
#   make book   execute the notebooks and build the website into _build/html
#   make test   unit tests and lab_utils' doctests, nbval over every notebook, each notebook run
#               alone as Colab opens it (test-standalone), a strict, clean book build, and every
#               page of that build opened in headless Chromium with no internet (test-site)
#   make linkcheck   check the website's external links (needs internet; not part of make test)

PYTHON ?= $(first_python)
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
NBVAL_FLAGS := --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
SITE_HTML := _build/strict/_build/html
CHROMIUM ?= chromium

.PHONY: setup lab book test test-unit test-notebooks test-standalone test-book test-site site-deps web-assets linkcheck clean

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

book: $(INSTALLED) web-assets
	$(BIN)/jupyter-book build .
	@echo "Website: _build/html/index.html"

test: test-unit test-notebooks test-standalone site-deps test-book test-site

# The unit tests, and the examples in lab_utils' docstrings run as doctests (no GPU, widgets or
# network needed: every module imports with the required packages alone).
test-unit: $(INSTALLED)
	$(BIN)/python -m pytest --doctest-modules tests lab_utils

test-notebooks: $(INSTALLED)
	$(BIN)/python -m pytest $(NBVAL_FLAGS) notebooks

# Each notebook alone, as Colab opens it (scripts/standalone_notebooks.py): copied into an empty
# folder and run in a separate environment (_build/standalone-venv) that has torch and Colab's
# ipywidgets 7.7 but no lab_utils, so the setup cell installs the course from this clone; fails
# when a cell fails or torch or ipywidgets changed version. Slow: 1-3 minutes a notebook.
# STANDALONE_REPOSITORY=file://$(CURDIR) installs the committed state with git, as Colab does.
STANDALONE_REPOSITORY ?= $(CURDIR)
test-standalone: $(INSTALLED)
	$(BIN)/python scripts/standalone_notebooks.py --repository $(STANDALONE_REPOSITORY)

# Strict: warnings are errors, and a fresh output folder so no cached execution hides a failure.
test-book: $(INSTALLED) web-assets
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
# internet; not part of make test, and a failure here blocks nothing. Runs the notebooks once more.
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
LAB_INSTALLED := $(VENV)/.installed-lab
setup-lab: $(LAB_INSTALLED)

$(LAB_INSTALLED): pyproject.toml constraints.txt
	$(make_venv)
	$(BIN)/python -m pip install --quiet --constraint constraints.txt --editable ".[lab]"
	touch $@

# The offline bundle for a room without internet (downloads several GB; not part of make test):
# _build/offline/course-offline.zip. OFFLINE_FLAGS="--pythons 3.12 --platforms linux" for a smaller one.
offline-bundle: $(INSTALLED)
	$(BIN)/python scripts/offline_bundle.py $(OFFLINE_FLAGS)

clean:
	rm -rf _build .pytest_cache
