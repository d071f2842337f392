# The contributor's loop (docs/development.md). Each target runs what CI runs, in .venv.
# The suite tests the installed wheel, not src/: `test-fast` and `test` rebuild it first when a
# file under src/ (or pyproject.toml) changed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export SYSTEM1_TOOLS_DIR ?= $(CURDIR)/.tools
SOURCES := pyproject.toml $(shell find src -type f -not -name '*.pyc' -not -path '*.egg-info*' 2>/dev/null)
STAMP := $(VENV)/.installed-wheel

.PHONY: help install wheel lint test-fast test clients durations

help:  ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

install: $(STAMP)  ## a development environment: .venv with the wheel and its [local,test] extras

$(STAMP): $(SOURCES)
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q build
	rm -rf dist src/*.egg-info
	$(BIN)/python -m build -q --wheel
	$(BIN)/pip install -q "$$(echo dist/*.whl)[local,test]"
	$(BIN)/pip install -q --no-deps --force-reinstall dist/*.whl
	touch $@

wheel: $(STAMP)  ## rebuild and reinstall the wheel if src/ changed

lint: $(STAMP)  ## ruff and mypy, as tests/test_lint.py and tests/test_typecheck.py run them
	$(BIN)/python -m ruff check src tests scripts benchmarks
	$(BIN)/python -m mypy

test-fast: $(STAMP)  ## the tests that took < 1 s in the last recorded run: no real clients, daemons or model loads
	$(BIN)/python -m pytest -m "not slow" -q --durations=5

test:  ## README command 2: build the sdist and wheel, a fresh .venv, the whole suite
	rm -rf dist src/*.egg-info && $(PYTHON) -m venv --clear $(VENV) && $(BIN)/pip install -q build && $(BIN)/python -m build -q && $(BIN)/pip install -q "$$(echo dist/*.whl)[local,test]" && $(BIN)/python -m pytest

clients:  ## the real clients and services CI installs (Claude Code, Pi, MCP Inspector, Node 22, Chromium, ...)
	bash scripts/test_clients.sh

durations: $(STAMP)  ## run the whole suite and record each test's time (tests/durations.json: order and `slow`)
	$(BIN)/python -m pytest --record-durations tests/durations.json
