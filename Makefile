# Every target that runs code depends on `install`, so a fresh clone needs only
# Python 3.11, pip and make.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA ?= ../shared/data/climate-fever

.PHONY: install demo test lint bench bench-quick eval clean docs

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: install
	rm -f demo.db demo.db-wal demo.db-shm
	$(BIN)/claimfsm demo --db demo.db

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check fsm skills state tests
	$(BIN)/mypy

bench: install
	$(BIN)/claimfsm bench --json bench.json

bench-quick: install
	$(BIN)/claimfsm bench --quick

eval: install
	@if [ -f $(DATA)/dev.jsonl ]; then \
		$(BIN)/claimfsm eval $(DATA)/dev.jsonl --corpus $(DATA)/corpus.jsonl; \
	else echo "$(DATA) not found: nothing to evaluate"; fi

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache demo.db bench.json

docs: install
	$(BIN)/python -m fsm.cli_docs > docs/cli.md
	$(BIN)/claimfsm diagram > /dev/null
