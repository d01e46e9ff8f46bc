# Every target runs inside .venv, which `make install` creates.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help install test check lint typecheck bench clean

help:  ## list the targets
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv with the project (editable) and its test tools

test: $(STAMP)  ## run the whole test suite
	$(BIN)/pytest -q

lint: $(STAMP)  ## ruff
	$(BIN)/ruff check handoff_cli tests bench
	$(BIN)/ruff format --check handoff_cli tests bench

typecheck: $(STAMP)  ## mypy (strict)
	$(BIN)/mypy

check: lint typecheck test  ## lint, types and tests

bench: $(STAMP)  ## print the performance figures
	$(BIN)/python bench/bench.py

clean:  ## remove the venv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
