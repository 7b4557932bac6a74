# The course's verbs. Each sets up .venv first when needed (install with the tested pins).
#   make lab    open JupyterLab on the course
#   make book   execute the notebooks and build the website into _build/html
#   make test   unit tests, nbval over every notebook, and a strict, clean book build

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
NBVAL_FLAGS := --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: setup lab book test test-unit test-notebooks test-book clean

setup: $(INSTALLED)

$(INSTALLED): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --constraint constraints.txt --editable ".[lab,book,test]"
	$(BIN)/python -c "import torch; print('installed torch', torch.__version__, '(CUDA build)' if torch.version.cuda else '(CPU build)')"
	touch $@

lab: $(INSTALLED)
	$(BIN)/jupyter lab notebooks/00_start_here.ipynb

book: $(INSTALLED)
	$(BIN)/jupyter-book build .
	@echo "Website: _build/html/index.html"

test: test-unit test-notebooks test-book

test-unit: $(INSTALLED)
	$(BIN)/python -m pytest tests

test-notebooks: $(INSTALLED)
	$(BIN)/python -m pytest $(NBVAL_FLAGS) notebooks

# Strict: warnings are errors, and a fresh output folder so no cached execution hides a failure.
test-book: $(INSTALLED)
	rm -rf _build/strict
	$(BIN)/jupyter-book build --all --warningiserror --keep-going --path-output _build/strict .

clean:
	rm -rf _build .pytest_cache
