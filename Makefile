# Every target does its own set-up: a fresh clone needs only python3 (3.9+) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	rm -f $(VENV)/.installed-*
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(STAMP)
	$(BIN)/audit-forwarder demo

test: $(STAMP) lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check forwarder handlers tests bench
	$(BIN)/ruff format --check forwarder handlers tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	sh tests/syslog/install-rsyslog.sh
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python bench/normalize.py

# Build targets of the runtimes (lambda-package, splunk-app, ...) live beside this file.
-include mk/*.mk

clean:
	rm -rf $(VENV) out state dist build .pytest_cache .mypy_cache .ruff_cache .hypothesis
