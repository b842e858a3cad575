# Dense-Mem. `make demo` runs the main job on the embedded server; `make test` runs every test.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo serve test test-tools lint bench clean-db

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# The CPU build of torch first: a bare `torch` would pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[local,mcp,dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/densemem demo

serve: $(STAMP)
	$(BIN)/densemem serve

test-tools: $(STAMP)
	VENV_PYTHON=$(PY) ./scripts/install_test_tools.sh

lint: $(STAMP)
	$(BIN)/ruff check py tests
	$(BIN)/ruff format --check py tests
	$(BIN)/mypy
	$(BIN)/sqlfluff lint sql migrations

test: test-tools lint
	$(BIN)/pytest tests

bench: $(STAMP)
	$(BIN)/densemem bench recall

clean-db:
	-$(BIN)/densemem db stop
	rm -rf .densemem
