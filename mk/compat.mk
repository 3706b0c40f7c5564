# Python 3.9 (Splunk's bundled Python) without orjson (the add-on ships pure Python): the core's
# tests run again in a second virtualenv. Skipped, with a line saying so, where no 3.9 exists.
VENV39 := .venv39
PY39   ?= $(firstword $(foreach p,python3.9 $(wildcard $(HOME)/.pyenv/versions/3.9*/bin/python3.9),$(shell $(p) -c 'import sys; print("$(p)") if sys.version_info[:2] == (3, 9) else None' 2>/dev/null)))
COMPAT_TESTS := tests/pipeline tests/test_pipeline.py tests/delivery tests/state/test_local.py tests/state/test_delivered.py \
                tests/state/test_locations.py tests/state/test_model.py tests/state/test_names.py tests/normalize \
                tests/test_timeutil.py tests/api tests/test_deadline.py tests/hostile/test_proxy_deadline.py \
                tests/hostile/test_hostile_transport.py tests/test_config.py tests/test_streams.py \
                tests/test_jsonutil.py tests/test_records.py tests/test_tenants.py tests/fanout \
                tests/sinks/test_hec.py tests/sinks/test_base.py tests/sinks/test_file.py tests/sinks/test_stdout.py \
                tests/e2e/test_run_hec.py tests/console/test_run_in_terminal.py

.PHONY: compat39

# boto3: settings naming s3://, dynamodb:// or secretsmanager: need the aws extra (else a configuration
# error says so), and the core's tests read such settings.
$(VENV39)/.installed: pyproject.toml mk/compat.mk
	$(PY39) -m venv $(VENV39)
	$(VENV39)/bin/python -m pip install --quiet --upgrade pip
	$(VENV39)/bin/python -m pip install --quiet 'requests>=2.28,<3' 'urllib3>=1.26,<3' idna python-json-logger pytest hypothesis pyyaml \
		'boto3>=1.28,<2' 'botocore>=1.31,<2'
	$(VENV39)/bin/python -m pip install --quiet --no-deps -e .
	touch $@

ifeq ($(PY39),)
compat39:
	@echo "compat39: no Python 3.9 found; the 3.9 run is skipped"
else
compat39: $(VENV39)/.installed
	$(VENV39)/bin/python -c 'import sys, forwarder.jsonutil as j; assert sys.version_info[:2] == (3, 9) and not j.HAVE_ORJSON'
	$(VENV39)/bin/pytest -q -p no:cacheprovider $(COMPAT_TESTS)
endif
