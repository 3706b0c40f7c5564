# Every target does its own set-up: a fresh clone needs only python3 (3.9+) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint typecheck unit bench clean
.DEFAULT_GOAL := test

# The runtimes' build targets (lambda-package, splunk-app) and the Python 3.9 run live in mk/.
include $(sort $(wildcard mk/*.mk))

$(STAMP): pyproject.toml
	rm -f $(VENV)/.installed-*
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(STAMP)
	$(BIN)/audit-forwarder demo

test: $(STAMP) lint typecheck unit compat39

lint: $(STAMP)
	$(BIN)/ruff check forwarder handlers tests bench tools
	$(BIN)/ruff format --check forwarder handlers tests bench tools

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) $(APPINSPECT) $(UCC_GEN)
	sh tests/syslog/install-rsyslog.sh
	SPLUNK_APPINSPECT=$(abspath $(APPINSPECT)) UCC_GEN=$(abspath $(UCC_GEN)) $(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python bench/normalize.py
	$(BIN)/python bench/normalize.py --records-per-pass 3
	$(BIN)/python bench/held_pass.py
	$(BIN)/python bench/hec_sink.py
	$(BIN)/python bench/progress.py
	$(BIN)/python bench/shallow_streams.py
	$(BIN)/python bench/backlog.py

clean:
	rm -rf $(VENV) $(VENV39) $(APPINSPECT_VENV) $(UCC_VENV) out state quarantine dist build .pytest_cache .mypy_cache .ruff_cache .hypothesis
