# Every target does its own set-up: a fresh clone needs only python3 (3.9+) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
CKSUM  := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
STAMP  := $(VENV)/.installed-$(CKSUM)
RUN_STAMP := $(VENV)/.run-$(CKSUM)

.PHONY: demo test lint typecheck unit bench clean
.DEFAULT_GOAL := test

# The runtimes' build targets (lambda-package, splunk-app) and the Python 3.9 run live in mk/.
include $(sort $(wildcard mk/*.mk))

# Two stamps in one virtualenv: running needs the package alone (`make demo`, about 30 MB);
# the tests add their toolchain (moto, cfn-lint, pySigma, mypy, ruff, ...) on top.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	rm -f $(VENV)/.run-*
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(STAMP): pyproject.toml | $(BIN)/python
	rm -f $(VENV)/.installed-*
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: $(RUN_STAMP)
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
