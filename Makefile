# Every target runs inside .venv, which `make install` creates.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# pytest-xdist workers for `make test` and `make stress`; JOBS=0 runs in one process.
JOBS ?= 2
# Bytecode written ahead, as pip writes it for an installed package (an editable install does
# not, and with PYTHONDONTWRITEBYTECODE set every process the tests start would compile again).
COMPILE := $(BIN)/python -m compileall -q handoff_cli

.PHONY: help demo install test test-heavy test-all stress check lint typecheck bench eval clean

# The demo hands off a copy of an example session, so sessions/ stays as it is.
DEMO := .demo
DEMO_SESSION := 019ac4d2
DEMO_CLAUDE := 5c1e2f7a
DEMO_CODEX := 019ad9f3
DEMO_GEMINI := eed07f81
DEMO_QWEN := fd5c3a20
DEMO_OPENCODE := ses_dc7f05
# Nothing configured: no key for the examples' models, so the built-in extractive writer runs.
DEMO_ENV := env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u HANDOFF_MODEL -u HANDOFF_API_KEY \
	-u HANDOFF_API_BASE HANDOFF_SESSIONS_DIR=$(DEMO)/sessions

help:  ## list the targets
	@grep -E '^[a-z]+:.*##' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# setuptools warns that ./handoff_cli could shadow the install: here it is the install.
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)  ## hand off the example sessions (of all six agents) with no key and no model provider
	rm -rf $(DEMO) && mkdir -p $(DEMO) && cp -R sessions $(DEMO)/sessions
	@id=$$($(DEMO_ENV) $(BIN)/handoff $(DEMO_SESSION) --focus "the --retries flag") && \
	echo "new session: $$id" && $(DEMO_ENV) $(BIN)/handoff show "$$id" && \
	echo && $(DEMO_ENV) $(BIN)/handoff show "$$id" --document
	@id=$$($(DEMO_ENV) $(BIN)/handoff $(DEMO_CLAUDE)) && \
	echo && echo "new Claude Code session: $$id" && $(DEMO_ENV) $(BIN)/handoff show "$$id" --context
	@id=$$($(DEMO_ENV) $(BIN)/handoff $(DEMO_CODEX)) && \
	echo && echo "new Codex rollout: $$id" && $(DEMO_ENV) $(BIN)/handoff show "$$id" --context
	@id=$$($(DEMO_ENV) $(BIN)/handoff $(DEMO_GEMINI)) && \
	echo && echo "new Gemini CLI chat: $$id" && $(DEMO_ENV) $(BIN)/handoff show "$$id" --context
	@id=$$($(DEMO_ENV) $(BIN)/handoff $(DEMO_QWEN)) && \
	echo && echo "new Qwen Code session: $$id" && $(DEMO_ENV) $(BIN)/handoff show "$$id" --context
	@id=$$($(DEMO_ENV) $(BIN)/handoff $(DEMO_OPENCODE)) && \
	echo && echo "new opencode session (in its database): $$id" && \
	$(DEMO_ENV) $(BIN)/handoff show "$$id" --context

install: $(STAMP)  ## create .venv with the project (editable), its test and lint tools

test: $(STAMP)  ## the quick test suite: 2 kills, 2 writers, 15-60 fuzz cases each
	$(COMPILE)
	$(BIN)/pytest -q -n $(JOBS) --dist loadgroup

test-heavy: $(STAMP)  ## the heavy tests: peak memory of 10-20 MB files, LiteLLM's own token counts
	$(COMPILE)
	$(BIN)/pytest -q -n $(JOBS) --dist loadgroup -m "heavy and not slow"

test-all: test test-heavy  ## every test at its quick size (CI runs this)

stress: $(STAMP)  ## the long safety runs (-m slow): 200 kills, 1,500 fuzz cases each, 6 writers
	$(COMPILE)
	$(BIN)/pytest -q -n $(JOBS) --dist loadgroup -rP -m slow

lint: $(STAMP)  ## ruff
	$(BIN)/ruff check handoff_cli tests bench
	$(BIN)/ruff format --check handoff_cli tests bench

typecheck: $(STAMP)  ## mypy (strict on handoff_cli, lighter on tests and bench)
	$(BIN)/mypy

check: lint typecheck test-all  ## lint, types and every test at its quick size

bench: $(STAMP)  ## print the performance figures
	$(COMPILE)
	$(BIN)/python bench/bench.py

eval: $(STAMP)  ## the probes' scores (handoff check) over the corpus, the real sessions' labels, the gate on hand-written documents, then the masker on the held-out secrets
	$(BIN)/python -m bench.eval
	$(BIN)/python bench/secrets_heldout.py

clean:  ## remove the venv, the demo's output and the caches
	rm -rf $(VENV) $(DEMO) .pytest_cache .mypy_cache .ruff_cache
